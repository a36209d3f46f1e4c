#!/bin/bash
# deps-graph.sh [--graph] [FILE...] - no circle among the C files: the
# file-level graph of who depends on whom has no loop, so every file can
# be read after the ones below it. Fails (exit 1) naming each circle, one
# shortest loop of files per group that depend on one another, with what
# each step of it uses. --graph also prints every dependency.
#
# A.c depends on B.c when
#   - A.c names a function or a global variable that B.c defines (a call,
#     or a function handed on as a pointer: the round tables), itself or
#     through a macro of its own or of a header it reaches
#     (HCG__CONFIG_READ names hcg__config_read); names that A.c defines
#     itself, static or not, stay A.c's;
#   - A.c includes B.h, directly or through other headers of the tree:
#     B.h, beside B.c, is B.c's interface, and using it (even only for a
#     type) is using B.c. A header without a .c of its name (rt.h, cli.h,
#     hcg.h) only gathers declarations; what A.c takes from it counts
#     through the names above.
# Where two files define one name (pmix_link.c, pmix_dl.c and pmix_none.c,
# of which a build takes one), a file naming it depends on each.
#
# Without FILE: every .c and .h of the checkout, tracked or new (outside
# git, as in a release tarball, every one under the source tree, as
# check-format.sh takes them). The reading is lexical, over the sources as
# clang-format leaves them (comments, strings and preprocessor lines
# dropped; a definition is a name at file level followed by its body or
# its initial value): no build, no compiler, only awk, so it runs anywhere
# in a second.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
graph=0
if [ "${1:-}" = --graph ]; then
  graph=1
  shift
fi

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  # git's list only where this tree is a checkout's top: a tarball unpacked
  # inside another checkout (make distcheck's, under build/) is read whole.
  if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
    # New files too, before they are added: a circle through one counts.
    mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' |
      sort -u | while IFS= read -r f; do [ ! -f "$f" ] || echo "$f"; done)
  else
    mapfile -t files < <(find . -path ./build -prune -o -path './build-*' -prune \
      -o -path ./autom4te.cache -prune -o \( -name '*.c' -o -name '*.h' \) -print |
      sed 's|^\./||' | sort)
  fi
fi
[ ${#files[@]} -gt 0 ] || { echo "deps-graph: no C files" >&2; exit 2; }

# Stage one, per file: what it includes, defines and names; out come the
# dependencies, "A<TAB>B<TAB>how", one per name or header.
read -r -d '' scan <<'AWK' || true
# The file-level statement being read: its tokens, and what they hold.
function reset_stmt() { ns = 0; has_eq = 0; has_paren = 0; skip = 0; is_static = 0 }

# The line without comments, string and character literals (incomment
# carries a /* */ comment over lines).
function strip(s,   out, i, q, c, d) {
  out = ""
  while (s != "") {
    if (incomment) {
      i = index(s, "*/")
      if (!i)
        return out
      s = substr(s, i + 2)
      incomment = 0
      out = out " "
      continue
    }
    if (!match(s, /\/\*|\/\/|["']/))
      return out s
    i = RSTART
    out = out substr(s, 1, i - 1) " "
    q = substr(s, i, 2)
    if (q == "/*") {
      incomment = 1
      s = substr(s, i + 2)
      continue
    }
    if (q == "//")
      return out
    c = substr(s, i, 1)
    s = substr(s, i + 1)
    while (s != "") {
      d = substr(s, 1, 1)
      s = substr(s, d == "\\" ? 3 : 2)
      if (d == c)
        break
    }
  }
  return out
}

# The name a file-level statement defines: a function (its parameter list
# ends the statement, its body follows), or a variable (no parameter list,
# or a pointer to a function, "(*name)"). "" for a prototype, a type.
function defined_name(is_body,   i, t) {
  if (skip || ns == 0)
    return ""
  if (is_body && !has_eq) {
    if (stmt[ns] != ")")
      return "" # struct, enum, union
    for (i = 1; i < ns; i++)
      if (stmt[i] ~ /^[A-Za-z_]/ && stmt[i + 1] == "(" && !(stmt[i] in not_name))
        return stmt[i]
    return ""
  }
  # A pointer to a function: its first parenthesis holds "*name".
  for (i = 1; i + 3 <= ns && stmt[i] != "("; i++)
    ;
  if (i + 3 <= ns && stmt[i + 1] == "*" && stmt[i + 2] ~ /^[A-Za-z_]/ &&
      stmt[i + 3] == ")")
    return stmt[i + 2]
  if (has_paren && !has_eq)
    return "" # a prototype
  t = ""
  for (i = 1; i <= ns; i++) {
    if (stmt[i] == "=" || stmt[i] == "[")
      break
    if (stmt[i] ~ /^[A-Za-z_]/ && !(stmt[i] in not_name))
      t = stmt[i]
  }
  return t == stmt[1] ? "" : t # one word is no definition
}

function define(name) {
  if (name == "" || name == "main")
    return
  own[file, name] = 1
  if (!is_static)
    definers[name] = definers[name] " " file
}

function token(t,   tag) {
  # A struct's, union's or enum's tag is no variable of the same name.
  tag = prev == "struct" || prev == "union" || prev == "enum"
  prev = t
  if (t ~ /^[A-Za-z_]/ && !tag)
    named[file, t] = 1
  if (t == "{") {
    if (depth == 0) {
      define(defined_name(1))
      reset_stmt()
    }
    depth++
    return
  }
  if (t == "}") {
    if (depth > 0)
      depth--
    return
  }
  if (depth > 0)
    return
  if (t == ";") {
    define(defined_name(0))
    reset_stmt()
    return
  }
  if (t == "static")
    is_static = 1
  if (t == "extern" || t == "typedef" || t == "_Static_assert")
    skip = 1
  if (t == "=")
    has_eq = 1
  if (t == "(")
    has_paren = 1
  stmt[++ns] = t
}

BEGIN {
  split("__attribute__ __typeof__ typeof sizeof _Alignas _Static_assert " \
        "void char short int long float double signed unsigned const " \
        "volatile struct union enum static inline restrict _Bool", w, " ")
  for (i in w)
    not_name[w[i]] = 1
  OFS = "\t"
}

FNR == 1 {
  file = FILENAME
  known[file] = 1
  is_c = file ~ /\.c$/
  if (is_c)
    cfiles[++ncfiles] = file
  incomment = 0
  cont = 0
  depth = 0
  reset_stmt()
}

{
  line = $0
  if (cont) {
    cont = line ~ /\\$/
    macro_names(strip(line))
    next
  }
  if (!incomment && line ~ /^[ \t]*#/) {
    macro = ""
    if (line ~ /^[ \t]*#[ \t]*include[ \t]*"/) {
      h = line
      sub(/^[^"]*"/, "", h)
      sub(/".*/, "", h)
      includes[file] = includes[file] " " h
    } else if (line ~ /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_]/) {
      sub(/^[ \t]*#[ \t]*define[ \t]+/, "", line)
      match(line, /^[A-Za-z_][A-Za-z0-9_]*/)
      macro = substr(line, 1, RLENGTH)
      macros[file] = macros[file] " " macro
      macro_names(strip(substr(line, RLENGTH + 1)))
    }
    cont = line ~ /\\$/
    next
  }
  if (!is_c)
    next
  line = strip(line)
  # ==, != and the like are no "=": no definition's initial value.
  while (match(line, /[A-Za-z_][A-Za-z0-9_]*|[=!<>]=|[{}();=*\[]/)) {
    token(substr(line, RSTART, RLENGTH))
    line = substr(line, RSTART + RLENGTH)
  }
}

# The names in a line of the body of the #define being read.
function macro_names(s) {
  if (macro == "")
    return
  while (match(s, /[A-Za-z_][A-Za-z0-9_]*/)) {
    if (substr(s, RSTART, RLENGTH) != macro)
      body[file, macro] = body[file, macro] " " substr(s, RSTART, RLENGTH)
    s = substr(s, RSTART + RLENGTH)
  }
}

# What f names through macro m (defined in one of the files of `defs`),
# recorded in via[f, name] = the macro f itself named; macros in macros
# too, a few deep.
function expand(f, m, top, deep,   i, n, w, j, k, id) {
  for (i = 1; i <= ndefs; i++) {
    if (!((defs[i], m) in body))
      continue
    n = split(body[defs[i], m], w, " ")
    for (j = 1; j <= n; j++) {
      id = w[j]
      if (((f, id) in named) || ((f, id) in via))
        continue
      via[f, id] = top
      if (deep < 8)
        expand(f, id, top, deep + 1)
    }
  }
}

function depend(f, name, how,   n, d, i) {
  if (((f, name) in own) || !(name in definers))
    return
  n = split(definers[name], d, " ")
  for (i = 1; i <= n; i++)
    if (d[i] != f)
      print f, d[i], "uses " name how
}

# A header named in f: beside f, else under runtime/ (-I runtime), else
# from the top of the tree; "" when the tree has none (a system header, or
# config.h, which configure writes).
function resolve(f, h,   dir, p) {
  dir = f
  if (!sub(/\/[^\/]*$/, "", dir))
    dir = "."
  p = (dir == "." ? "" : dir "/") h
  while (p ~ /[^\/]+\/\.\.\//)
    sub(/[^\/]+\/\.\.\//, "", p)
  if (p in known)
    return p
  if (("runtime/" h) in known)
    return "runtime/" h
  return (h in known) ? h : ""
}

END {
  for (k in named) {
    split(k, p, SUBSEP)
    depend(p[1], p[2], "")
  }
  # Headers reached from each .c, breadth first; a header whose .c is in
  # the tree makes that .c a dependency. The macros of those headers and
  # of the .c itself are the ones its names may expand.
  for (c = 1; c <= ncfiles; c++) {
    f = cfiles[c]
    split("", seen)
    split("", q)
    nq = 0
    n = split(includes[f], hs, " ")
    for (i = 1; i <= n; i++)
      if ((h = resolve(f, hs[i])) != "" && !(h in seen)) {
        seen[h] = hs[i]
        q[++nq] = h
      }
    for (j = 1; j <= nq; j++) {
      h = q[j]
      b = h
      sub(/\.h$/, ".c", b)
      if (b != f && (b in known))
        print f, b, "includes " seen[h]
      n = split(includes[h], hs, " ")
      for (i = 1; i <= n; i++)
        if ((g = resolve(h, hs[i])) != "" && !(g in seen)) {
          seen[g] = seen[h] " -> " hs[i]
          q[++nq] = g
        }
    }
    split("", defs)
    ndefs = 0
    defs[++ndefs] = f
    for (j = 1; j <= nq; j++)
      if (macros[q[j]] != "")
        defs[++ndefs] = q[j]
    split("", via)
    for (k in named) {
      split(k, p, SUBSEP)
      if (p[1] == f)
        expand(f, p[2], p[2], 0)
    }
    for (k in via) {
      split(k, p, SUBSEP)
      depend(f, p[2], " (in " via[k] ")")
    }
  }
}
AWK

# Stage two: the graph, its strongly connected groups (Tarjan), and per
# group of two or more files one shortest loop through its first file.
read -r -d '' loops <<'AWK' || true
BEGIN { FS = "\t" }
{
  if (!(($1, $2) in how)) {
    out[$1] = out[$1] " " $2
    how[$1, $2] = $3
    nedges++
  } else if (split(how[$1, $2], w, ", ") < 3)
    how[$1, $2] = how[$1, $2] ", " $3
  else if (how[$1, $2] !~ /, \.\.\.$/)
    how[$1, $2] = how[$1, $2] ", ..."
  node[$1] = 1
  node[$2] = 1
}

function connect(v,   n, e, i, w) {
  index_of[v] = low[v] = ++counter
  stack[++sp] = v
  on_stack[v] = 1
  n = split(out[v], e, " ")
  for (i = 1; i <= n; i++) {
    w = e[i]
    if (!(w in index_of)) {
      connect(w)
      if (low[w] < low[v])
        low[v] = low[w]
    } else if (on_stack[w] && index_of[w] < low[v])
      low[v] = index_of[w]
  }
  if (low[v] == index_of[v]) {
    ngroups++
    do {
      w = stack[sp--]
      on_stack[w] = 0
      group[w] = ngroups
      size[ngroups]++
    } while (w != v)
  }
}

# One shortest loop from s back to s inside its group (breadth first).
function shortest_loop(s,   q, nq, j, v, n, e, i, w, from, path) {
  nq = 0
  q[++nq] = s
  from[s] = ""
  for (j = 1; j <= nq; j++) {
    v = q[j]
    n = split(out[v], e, " ")
    for (i = 1; i <= n; i++) {
      w = e[i]
      if (group[w] != group[s])
        continue
      if (w == s) {
        path = s
        for (; v != s; v = from[v])
          path = v " " path
        return s " " path
      }
      if (!(w in from)) {
        from[w] = v
        q[++nq] = w
      }
    }
  }
  return ""
}

END {
  if (graph)
    for (k in how) {
      split(k, p, SUBSEP)
      print p[1] " -> " p[2] ": " how[k] | "sort"
    }
  close("sort")
  for (v in node)
    names[++nn] = v
  # Sorted, so that every run names the same loop.
  for (i = 2; i <= nn; i++)
    for (j = i; j > 1 && names[j - 1] > names[j]; j--) {
      t = names[j]; names[j] = names[j - 1]; names[j - 1] = t
    }
  for (i = 1; i <= nn; i++)
    if (!(names[i] in index_of))
      connect(names[i])
  bad = 0
  for (i = 1; i <= nn; i++) {
    s = names[i]
    if (size[group[s]] < 2 || done[group[s]])
      continue
    done[group[s]] = 1
    bad++
    n = split(shortest_loop(s), l, " ")
    line = ""
    for (j = 1; j <= n; j++)
      line = line (j > 1 ? " -> " : "") l[j]
    printf "deps-graph: circle: %s\n", line
    for (j = 1; j < n; j++)
      printf "  %s -> %s: %s\n", l[j], l[j + 1], how[l[j], l[j + 1]]
    if (size[group[s]] > n - 1) {
      printf "  (%d files depend on one another:", size[group[s]]
      for (j = 1; j <= nn; j++)
        if (group[names[j]] == group[s])
          printf " %s", names[j]
      printf ")\n"
    }
  }
  if (bad) {
    fflush() # the circles above, then this line, in a log of both streams
    printf "deps-graph: %d circle(s) among %d C files (%d dependencies)\n", bad, files, nedges > "/dev/stderr"
    exit 1
  }
  printf "deps-graph: %d C files, %d dependencies, no circle\n", files, nedges
}
AWK

ncfiles=$(printf '%s\n' "${files[@]}" | grep -c '\.c$' || true)
awk "$scan" "${files[@]}" | sort -u |
  awk -v graph="$graph" -v files="$ncfiles" "$loops"
