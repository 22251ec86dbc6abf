#!/bin/sh
# mmdebstrap --extract-hook of the runtime base (deploy/images.py base): $1 is the root
# filesystem, holding the unpacked packages and their .deb files. The "extract" variant runs
# no maintainer script, so what those scripts would leave behind is made here, the same way
# on every build (sorted inputs, fixed names, no time stamps of today).
set -eu
root=$1

# The package database, for the SBOM and for scanners: each package's control fields with
# its status, from the very .deb files that were unpacked (no dpkg runs in the image).
mkdir -p "$root/var/lib/dpkg"
: > "$root/var/lib/dpkg/status"
for deb in $(LC_ALL=C ls "$root"/var/cache/apt/archives/*.deb); do
  dpkg-deb -f "$deb" | sed '1a Status: install ok installed' >> "$root/var/lib/dpkg/status"
  echo >> "$root/var/lib/dpkg/status"
done

# Users: root, and paiju (10001), the user every image runs as.
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\npaiju:x:10001:10001:paiju:/app:/usr/sbin/nologin\n' \
  > "$root/etc/passwd"
printf 'root:x:0:\npaiju:x:10001:\n' > "$root/etc/group"

# CA certificates: the bundle update-ca-certificates would write (every Mozilla root).
mkdir -p "$root/etc/ssl/certs"
LC_ALL=C ls "$root"/usr/share/ca-certificates/mozilla/*.crt | while read -r crt; do
  cat "$crt"
done > "$root/etc/ssl/certs/ca-certificates.crt"

# UTC, as tzdata's configuration leaves a container without a time zone of its own.
ln -sf ../usr/share/zoneinfo/Etc/UTC "$root/etc/localtime"
echo Etc/UTC > "$root/etc/timezone"
mkdir -p "$root/tmp"
chmod 1777 "$root/tmp"

# The standard library's byte code, checked by source hash (not by file date), so that a
# read-only root file system never compiles at start and two builds write the same bytes.
PYTHONHASHSEED=0 chroot "$root" /usr/bin/python3 -m compileall -q -j 1 \
  --invalidation-mode unchecked-hash /usr/lib/python3.11 >/dev/null
