#!/bin/bash
# autogen.sh - generates configure (autoreconf -fi) when it is missing or
# older than configure.ac or a Makefile.am; else does nothing. The one rule
# of scripts/build.sh and of contrib/python/setup.py in a checkout.
set -eu
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] ||
   [ -n "$(find . -name Makefile.am -newer configure 2>/dev/null | head -n 1)" ]; then
  command -v autoreconf > /dev/null || {
    echo "autogen.sh: $PWD has no up-to-date configure, and autoreconf is not installed (autoconf, automake, libtool)" >&2
    exit 1
  }
  autoreconf -fi
fi
