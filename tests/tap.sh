# The TAP helper the shell tests share (sourced): `ok NAME STATUS` prints
# "ok N - NAME" or "not ok N - NAME" and counts failures in $failed;
# `skip NAME REASON` prints a skipped case.
n=0
failed=0

ok() { # ok NAME STATUS
	n=$((n + 1))
	if [ "$2" -eq 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		failed=$((failed + 1))
	fi
}

skip() { # skip NAME REASON
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}
