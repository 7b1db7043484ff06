# Sourced by the testdata scripts: apt_install NAME PACKAGE WHY installs a
# Debian package (with sudo unless root), updating the package lists once
# if the first try fails; without apt-get it says what is missing and why,
# and fails.
apt_install() {
	local name=$1 pkg=$2 why=$3 sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	if ! command -v apt-get >/dev/null; then
		echo "$name: no apt-get; install $pkg yourself ($why)" >&2
		return 1
	fi
	echo "$name: installing $pkg" >&2
	$sudo apt-get install -y --no-install-recommends "$pkg" >/dev/null ||
		{ $sudo apt-get update >/dev/null && $sudo apt-get install -y --no-install-recommends "$pkg" >/dev/null; }
}
