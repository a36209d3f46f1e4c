# hcg_flags.m4 - compiler and linker flags shared by every Makefile.am.
#
# HCG_CHECK_FLAG(FLAG, compile|link, [IF-OK], [IF-NOT])
# Whether the compiler takes FLAG without a warning (under -Werror, so a
# flag an older compiler ignores with a warning counts as refused), with the
# user's CFLAGS, CPPFLAGS and LDFLAGS. Cached per flag and kind.
AC_DEFUN([HCG_CHECK_FLAG], [
  AS_VAR_PUSHDEF([hcg_cv], [hcg_cv_$2_flag_$1])
  AC_CACHE_CHECK([whether $CC takes $1 ($2)], [hcg_cv], [
    hcg_save_CFLAGS=$CFLAGS; hcg_save_LDFLAGS=$LDFLAGS
    AS_IF([test "x$2" = "xlink"],
          [LDFLAGS="$LDFLAGS -Werror $1"], [CFLAGS="$CFLAGS -Werror $1"])
    dnl A buffer and a string call, so that the stack protector and
    dnl fortification have something to work on (and glibc's warning that
    dnl _FORTIFY_SOURCE needs optimization shows up).
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>
#include <string.h>]], [[char b[32];
snprintf(b, sizeof b, "%d", 1);
return (int)strlen(b);]])],
      [AS_VAR_SET([hcg_cv], [yes])], [AS_VAR_SET([hcg_cv], [no])])
    CFLAGS=$hcg_save_CFLAGS; LDFLAGS=$hcg_save_LDFLAGS])
  AS_VAR_IF([hcg_cv], [yes], [$3], [$4])
  AS_VAR_POPDEF([hcg_cv])
])

# HCG_HARDENING
# --enable-hardening (the default): what Debian's dpkg-buildflags and pyxis
# give code that root's slurmstepd loads: -fstack-protector-strong,
# -D_FORTIFY_SOURCE=2, full RELRO (-z relro -z now). Each flag is probed and
# left out where the compiler refuses it. _FORTIFY_SOURCE is left out
# without optimization (it does nothing there, and glibc may warn: the -O0
# debug builds), where the user's flags already define it, and under a
# sanitizer, whose interceptors would miss the fortified __*_chk calls.
# Sets HCG_HARDEN_CFLAGS and HCG_HARDEN_LDFLAGS.
AC_DEFUN([HCG_HARDENING], [
  AC_ARG_ENABLE([hardening],
    [AS_HELP_STRING([--disable-hardening],
      [build without the stack protector, _FORTIFY_SOURCE and full RELRO])],
    [], [enable_hardening=yes])
  HCG_HARDEN_CFLAGS=
  HCG_HARDEN_LDFLAGS=
  AS_IF([test "x$enable_hardening" != "xno"], [
    HCG_CHECK_FLAG([-fstack-protector-strong], [compile],
      [HCG_HARDEN_CFLAGS="$HCG_HARDEN_CFLAGS -fstack-protector-strong"])
    dnl glibc's own warning about -O0 comes from a system header, which
    dnl GCC keeps quiet: ask the compiler whether it optimizes instead.
    AC_CACHE_CHECK([whether CFLAGS optimize], [hcg_cv_optimize], [
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#if !defined __OPTIMIZE__
#error not optimizing
#endif
]], [[]])], [hcg_cv_optimize=yes], [hcg_cv_optimize=no])])
    AS_CASE([" $CFLAGS $CPPFLAGS "],
      [*" -fsanitize="*|*_FORTIFY_SOURCE*], [],
      [AS_IF([test "x$hcg_cv_optimize" = "xyes"],
        [HCG_CHECK_FLAG([-D_FORTIFY_SOURCE=2], [compile],
          [HCG_HARDEN_CFLAGS="$HCG_HARDEN_CFLAGS -D_FORTIFY_SOURCE=2"])])])
    HCG_CHECK_FLAG([-Wl,-z,relro], [link],
      [HCG_HARDEN_LDFLAGS="$HCG_HARDEN_LDFLAGS -Wl,-z,relro"])
    HCG_CHECK_FLAG([-Wl,-z,now], [link],
      [HCG_HARDEN_LDFLAGS="$HCG_HARDEN_LDFLAGS -Wl,-z,now"])
  ])
  AC_SUBST([HCG_HARDEN_CFLAGS])
  AC_SUBST([HCG_HARDEN_LDFLAGS])
])
