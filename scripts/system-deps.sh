#!/usr/bin/env bash
# Install the real components the tests drive (Debian packages), if missing:
# promtool/prometheus, alertmanager/amtool (routing tests), logrotate, OpenSSH sshd, mtail (benchmarks' peer), openssl (test certificates), tmux (live view), chromium (the report's screenshot test).
set -euo pipefail
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v logrotate >/dev/null || need+=(logrotate)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh-keygen >/dev/null || need+=(openssh-client)
command -v mtail >/dev/null || need+=(mtail)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v openssl >/dev/null || need+=(openssl)
command -v tmux >/dev/null || need+=(tmux)
command -v chromium >/dev/null || need+=(chromium)
command -v prometheus-alertmanager >/dev/null && command -v amtool >/dev/null || need+=(prometheus-alertmanager)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
