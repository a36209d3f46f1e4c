# hcg_probe.m4 - finding a dependency under one of several prefixes.
#
# HCG_PROBE(VAR, PREFIXES, HEADER, LIBS, BODY, [EXTRA_CPPFLAGS], [EXTRA_LIBS])
#
# Tries each prefix in turn; the header must be under the prefix itself, not
# found elsewhere by chance. With LIBS, BODY is compiled and linked against
# LIBS in each library directory of the prefix (hcg_libdirs); with LIBS empty
# (a header-only dependency, such as Slurm's spank.h) it is only compiled.
# The first that works sets VAR_CFLAGS, VAR_LIBS, VAR_PREFIX and
# hcg_found=yes; else hcg_found=no. Needs hcg_libdirs, hcg_multiarch and
# enable_rpath from configure.ac.
AC_DEFUN([HCG_PROBE], [
  hcg_found=no
  for hcg_p in $2; do
    AS_IF([test -r "$hcg_p/include/$3"], [], [continue])
    hcg_inc="-I$hcg_p/include"
    AS_IF([test "x$hcg_p" = "x/usr"], [hcg_inc=])
m4_ifblank([$4], [
    hcg_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$CPPFLAGS $hcg_inc $6"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <$3>]], [[$5]])],
                      [hcg_found=yes])
    CPPFLAGS=$hcg_save_CPPFLAGS
    AS_IF([test "x$hcg_found" = "xyes"], [
      $1_CFLAGS=$hcg_inc
      $1_LIBS=
      $1_PREFIX=$hcg_p
      break])
], [
    for hcg_l in `hcg_libdirs "$hcg_p"`; do
      AS_IF([test -d "$hcg_l"], [], [continue])
      hcg_ldir="-L$hcg_l"
      AS_CASE([$hcg_l], [/usr/lib|/usr/lib64|/usr/lib/$hcg_multiarch], [hcg_ldir=])
      hcg_save_CPPFLAGS=$CPPFLAGS; hcg_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $hcg_inc $6"
      LIBS="$hcg_ldir $4 $7 $LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <$3>]], [[$5]])],
                     [hcg_found=yes])
      CPPFLAGS=$hcg_save_CPPFLAGS; LIBS=$hcg_save_LIBS
      AS_IF([test "x$hcg_found" = "xyes"], [
        $1_CFLAGS=$hcg_inc
        $1_LIBS="$hcg_ldir $4"
        AS_IF([test "x$enable_rpath" = "xyes" && test -n "$hcg_ldir"],
              [$1_LIBS="$hcg_ldir -Wl,-rpath,$hcg_l $4"])
        $1_PREFIX=$hcg_p
        break 2])
    done
])
  done
])
