# spank_errors.awk - prints the SPANK error lines of a slurmd log that are
# not the deliberate refusal of a layout (tasks failing in task_init).
#
# Task processes log concurrently and Slurm writes a line in several
# write() calls, so lines can end up inside one another:
#   [t] [92.0] error: Failed to invo[t] [92.0] eke spank plugin stack
#   [t] [16.0][t] [16.0] e error: spank: required plugin spank_hcg.so: ...
# and the pieces fall at any byte, across lines too. With every "[time]"
# and "[step]" token removed, an intact line passes when an allowed message
# is a subsequence of it and the characters left over are, in order, a
# subsequence of an allowed message (pieces of another line, which arrive
# in order). A mangled line (a token cut in two, or a line not starting
# with its time) cannot be judged that way; it passes unless it carries a
# sign of a real SPANK failure: init, init_post_opt, user_init, exit,
# prolog or epilog failing, or the plugin failing to load.

# 1 when p is a subsequence of s.
function subsequence(p, s,    i, j) {
  j = 1
  for (i = 1; i <= length(s) && j <= length(p); i++)
    if (substr(s, i, 1) == substr(p, j, 1))
      j++
  return j > length(p)
}

# The characters of s left once p is matched greedily as a subsequence, or
# "\001" when p is not a subsequence of s.
function leftover(s, p,    i, j, rest) {
  j = 1
  rest = ""
  for (i = 1; i <= length(s); i++) {
    if (j <= length(p) && substr(s, i, 1) == substr(p, j, 1))
      j++
    else if (substr(s, i, 1) != " ")
      rest = rest substr(s, i, 1)
  }
  return j > length(p) ? rest : "\001"
}

BEGIN {
  allowed[1] = "error: Failed to invoke spank plugin stack"
  allowed[2] = "error: spank: spank_hcg.so: task_init() failed with rc=-1"
  nallowed = 2
}

function failure_signature(s) {
  return s ~ /(^|[^k])_init\(\) failed|(^|[^_a-z])init\(\) failed|init_post_opt|exit\(\) failed|prolog|epilog|[Ll]oad|dlopen|symbol/
}

/error: .*spank|spank.*error/ {
  line = $0
  mangled = line !~ /^\[[0-9-]+T[0-9:.]+\] /
  gsub(/\[[0-9-]+T[0-9:.]+\] ?/, "", line)
  gsub(/\[[0-9]+(\.[0-9a-z]+)?\] ?/, "", line)
  gsub(/spank: (required plugin )?[^ ]*spank_hcg\.so:/, "spank: spank_hcg.so:", line)
  if (line ~ /[][]/)
    mangled = 1
  ok = mangled && !failure_signature(line)
  for (k = 1; k <= nallowed && !ok; k++) {
    rest = leftover(line, allowed[k])
    if (rest == "")
      ok = 1
    for (m = 1; m <= nallowed && !ok && rest != "\001"; m++)
      if (subsequence(rest, allowed[m]))
        ok = 1
  }
  if (!ok)
    print $0
}
