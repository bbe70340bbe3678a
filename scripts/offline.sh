#!/usr/bin/env bash
# Run a command with no network: in a fresh network namespace whose only interface is loopback, so
# nothing it runs can reach another host; kernels, the local web server and the browser still talk
# over 127.0.0.1. Needs util-linux `unshare` and iproute2 `ip`. Tried in this order:
#   1. netns   `unshare --net` (root with CAP_SYS_ADMIN);
#   2. userns  `unshare --user --map-root-user --net` (any user, where the kernel allows
#              unprivileged user namespaces; inside, the command runs as a mapped "root" that owns
#              nothing outside the namespace);
#   3. otherwise stop, saying what is missing. BOOK_ALLOW_NETWORK=1 runs the command anyway, WITH
#      the network; the test run then says so in its summary (tests/conftest.py).
# Already inside a namespace with only loopback (a nested call from the Makefile): run directly.
# The mode is exported as BOOK_OFFLINE (netns, userns, loopback-only or network-allowed); tests/test_offline.py
# checks that the test processes really see only loopback.
set -euo pipefail
# tests/test_offline.py points this at a fake file to exercise the failure paths from inside a namespace.
NETDEV=${BOOK_OFFLINE_NETDEV:-/proc/net/dev}

only_loopback() {
  # /proc/net/dev follows the network namespace (/sys/class/net does not): interfaces but "lo"?
  local line name
  while IFS= read -r line; do
    [[ $line == *:* ]] || continue
    name=${line%%:*}
    name=${name// /}
    [[ $name == lo ]] || return 1
  done <"$NETDEV"
}

if [[ -r $NETDEV ]] && only_loopback; then
  case ${BOOK_OFFLINE:-} in
    netns | userns) ;;
    *) export BOOK_OFFLINE=loopback-only ;;  # e.g. a container started with no network
  esac
  exec "$@"
fi

if [[ ${BOOK_ALLOW_NETWORK:-} == 1 ]]; then
  echo "offline.sh: BOOK_ALLOW_NETWORK=1: running WITH the network (this run is not offline)" >&2
  export BOOK_OFFLINE=network-allowed
  exec "$@"
fi

missing=()
command -v unshare >/dev/null || missing+=("util-linux 'unshare' (Debian/Ubuntu: apt-get install util-linux)")
command -v ip >/dev/null || missing+=("iproute2 'ip' (Debian/Ubuntu: apt-get install iproute2)")
errors=()
if ((${#missing[@]} == 0)); then
  # Bring loopback up inside the namespace, then run the command there.
  inner='ip link set lo up && exec "$@"'
  if err=$(unshare --net -- true 2>&1); then
    export BOOK_OFFLINE=netns
    exec unshare --net -- bash -c "$inner" offline "$@"
  fi
  errors+=("'unshare --net': ${err:-failed} (needs root with CAP_SYS_ADMIN)")
  if err=$(unshare --user --map-root-user --net -- bash -c 'ip link set lo up' 2>&1); then
    export BOOK_OFFLINE=userns
    exec unshare --user --map-root-user --net -- bash -c "$inner" offline "$@"
  fi
  errors+=("'unshare --user --map-root-user --net': ${err:-failed} (needs unprivileged user
    namespaces: sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1 on older
    Debian kernels, kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu >= 23.10, and a
    container seccomp profile that allows unshare)")
fi

{
  echo "offline.sh: cannot cut the network for: $*"
  for item in "${missing[@]}"; do echo "  missing: $item"; done
  for item in "${errors[@]}"; do echo "  failed:  $item"; done
  echo "Fix one of the above (see CONTRIBUTING.md, 'Offline'), or run anyway WITH the network:"
  echo "  BOOK_ALLOW_NETWORK=1 make test    (the test summary then reports that it was not offline)"
} >&2
exit 2
