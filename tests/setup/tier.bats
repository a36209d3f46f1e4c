#!/usr/bin/env bats
# scripts/tier.sh's parts that need no root made: the mirror it takes from
# this machine's apt sources (HCG_APT_ETC stands for /etc/apt), and a root
# cache that does not exist yet.

setup() {
  TIER=$BATS_TEST_DIRNAME/../../scripts/tier.sh
  ETC=$BATS_TEST_TMPDIR/apt
  mkdir -p "$ETC/sources.list.d"
  unset HCG_DEBIAN_MIRROR
}

mirror() { HCG_APT_ETC=$ETC run "$TIER" mirror; }

@test "deb822: the first plain suite's URI, not security, updates or a disabled entry" {
  cat >"$ETC/sources.list.d/debian.sources" <<'SRC'
# a comment
Types: deb
URIs: http://security.example/debian-security
Suites: trixie-security
Components: main

Types: deb deb-src
URIs: http://off.example/debian
Suites: trixie
Enabled: no

Types: deb-src
URIs: http://src.example/debian
Suites: trixie

Types: deb
URIs: http://mirror.example/debian
  http://second.example/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  mirror
  [ "$status" -eq 0 ]
  [ "$output" = http://mirror.example/debian ]
}

@test "deb822 files come before sources.list; a disabled file is not read" {
  echo "deb http://list.example/debian bookworm main" >"$ETC/sources.list"
  printf 'Types: deb\nURIs: http://nope.example/debian\nSuites: bookworm\n' \
    >"$ETC/sources.list.d/old.sources.disabled"
  mirror
  [ "$output" = http://list.example/debian ]
  printf 'types: deb\nuris: https://site.example/debian\nsuites: bookworm\n' \
    >"$ETC/sources.list.d/site.sources"
  mirror
  [ "$output" = https://site.example/debian ]
}

@test "sources.list: options in brackets and comments are skipped" {
  cat >"$ETC/sources.list" <<'SRC'
# deb http://commented.example/debian bookworm main
deb-src http://src.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://security.example/debian-security bookworm-security main
deb [ arch=amd64 ] http://mirror.example/debian bookworm main contrib
SRC
  mirror
  [ "$status" -eq 0 ]
  [ "$output" = http://mirror.example/debian ]
}

@test "no Debian source: an error naming HCG_DEBIAN_MIRROR" {
  echo "deb cdrom:[Debian]/ bookworm main" >"$ETC/sources.list"
  mirror
  [ "$status" -eq 1 ]
  [[ $output == *"no Debian mirror in this machine's apt sources"* ]]
  [[ $output == *HCG_DEBIAN_MIRROR* ]]
}

@test "HCG_DEBIAN_MIRROR overrides the apt sources" {
  echo "deb http://list.example/debian bookworm main" >"$ETC/sources.list"
  HCG_DEBIAN_MIRROR=http://override.example/debian HCG_APT_ETC=$ETC run "$TIER" mirror
  [ "$output" = http://override.example/debian ]
}

@test "list and roots with a root cache that does not exist yet: nothing made" {
  local roots=$BATS_TEST_TMPDIR/none/hcg/roots
  HCG_ROOTS=$roots run "$TIER" list
  [ "$status" -eq 0 ]
  [[ $output == *debian12* && $output == *debian13* && $output == *sid* ]]
  HCG_ROOTS=$roots run "$TIER" roots
  [ "$output" = "$roots" ]
  [ ! -e "$BATS_TEST_TMPDIR/none" ]
}

@test "an unknown tier is refused before anything is made" {
  HCG_ROOTS=$BATS_TEST_TMPDIR/none/roots run "$TIER" root debian99
  [ "$status" -eq 1 ]
  [[ $output == *"unknown tier 'debian99'"* ]]
  [ ! -e "$BATS_TEST_TMPDIR/none" ]
}
