/*
 * file.c - "@PATH" layouts. The file is read with the caller's privileges,
 * bounded in size, and must be a regular file (not a FIFO or a device that
 * could block or never end).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int hcg_layout_read_file(const char *path, size_t max_bytes, char **text,
                         size_t *len, hcg_error *err) {
  if (text)
    *text = NULL;
  if (!path || !text)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to read a layout file");
  if (!max_bytes || max_bytes > HCG_MAX_LAYOUT_BYTES)
    max_bytes = HCG_MAX_LAYOUT_BYTES;
  if (!*path)
    return hcg__fail(err, HCG_ENOTFOUND,
                     "layout: '@' must be followed by a file name");

  /* O_NONBLOCK so that opening a FIFO cannot hang; regular files ignore it.
   */
  int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return hcg__fail(err, e == ENOENT || e == ENOTDIR ? HCG_ENOTFOUND : HCG_EIO,
                     "layout: cannot open layout file '%.256s': %s", path,
                     strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return hcg__fail(err, HCG_EIO,
                     "layout: layout file '%.256s' is not a regular file",
                     path);
  }
  if ((unsigned long long)st.st_size > max_bytes) {
    close(fd);
    return hcg__fail(err, HCG_ELIMIT,
                     "layout: layout file '%.256s' is %lld bytes; the limit "
                     "is %zu",
                     path, (long long)st.st_size, max_bytes);
  }
  /* Read at most one byte past the bound: the file may grow after fstat. */
  char *buf = malloc(max_bytes + 2);
  if (!buf) {
    close(fd);
    return hcg__fail(err, HCG_ENOMEM, "out of memory reading '%.256s'", path);
  }
  size_t n = 0;
  while (n <= max_bytes) {
    ssize_t r = read(fd, buf + n, max_bytes + 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return hcg__fail(err, HCG_EIO, "layout: cannot read '%.256s': %s", path,
                       strerror(e));
    }
    if (r == 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max_bytes) {
    free(buf);
    return hcg__fail(err, HCG_ELIMIT,
                     "layout: layout file '%.256s' is larger than the limit "
                     "of %zu bytes",
                     path, max_bytes);
  }
  buf[n] = '\0';
  *text = buf;
  if (len)
    *len = n;
  return HCG_OK;
}

int hcg_layout_load(const char *arg, const hcg_layout_config *cfg,
                    hcg_layout **out, hcg_error *err) {
  if (out)
    *out = NULL;
  if (!arg || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_layout_load");
  if (arg[0] != '@')
    return hcg_layout_parse(arg, strlen(arg), cfg, out, err);
  hcg_layout_config c;
  int rc = hcg__layout_config(cfg, &c, err);
  if (rc)
    return rc;
  char *text;
  size_t len;
  rc = hcg_layout_read_file(arg + 1, c.max_bytes, &text, &len, err);
  if (rc)
    return rc;
  struct hcg_source src = {text, len, c.source_name ? c.source_name : arg + 1};
  rc = hcg__layout_parse_source(&src, &c, out, err);
  free(text);
  return rc;
}
