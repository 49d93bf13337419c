# Real OpenSSH servers for the end-to-end tests (sourced after serve.sh,
# whose $tmp, $pids and cleanup it uses). Each server runs as the current
# user on a loopback address, with its own host key, accepting only the
# test's user key; nothing under /etc or ~/.ssh is read or written.
#
#   sshd_keys                 user key $tmp/ssh/id (and a second, unauthorized
#                             one, $tmp/ssh/wrong_id)
#   sshd_start NAME ADDR PORT starts a server; its pid goes to SSHD_PID_NAME
#   sshd_rekey NAME           gives NAME a new host key and restarts it
#   sshd_fingerprint NAME     SHA256 fingerprint of NAME's host key
SSHD=/usr/sbin/sshd

sshd_keys() {
    mkdir -p "$tmp/ssh" && chmod 700 "$tmp/ssh"
    ssh-keygen -q -t ed25519 -N '' -C infertop-test -f "$tmp/ssh/id" || return 1
    ssh-keygen -q -t ed25519 -N '' -C infertop-wrong -f "$tmp/ssh/wrong_id" || return 1
    cp "$tmp/ssh/id.pub" "$tmp/ssh/authorized_keys"
    # Privilege separation needs this directory when sshd runs as root.
    if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then
        mkdir -p /run/sshd && chmod 755 /run/sshd
    fi
}

# sshd_config for NAME: only public keys, no PAM (no system accounts
# setup needed), StrictModes off since the temp dir is the test's own.
sshd_config() {
    cat >"$tmp/ssh/$1.conf" <<EOF
ListenAddress $2:$3
HostKey $tmp/ssh/$1_host
PidFile $tmp/ssh/$1.pid
AuthorizedKeysFile $tmp/ssh/authorized_keys
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
LogLevel ERROR
EOF
}

# sshd_run NAME: starts sshd in the foreground (-D) in the background and
# waits until it accepts connections.
sshd_run() {
    eval "addr=\$SSHD_ADDR_$1 port=\$SSHD_PORT_$1"
    "$SSHD" -f "$tmp/ssh/$1.conf" -D -e 2>>"$tmp/ssh/$1.log" &
    eval "SSHD_PID_$1=$!"
    pids="$pids $!"
    n=0
    while [ $n -lt 100 ]; do
        ssh-keyscan -T 1 -p "$port" "$addr" >/dev/null 2>&1 && return 0
        sleep 0.1
        n=$((n + 1))
    done
    echo "sshd $1 on $addr:$port did not come up:" >&2
    cat "$tmp/ssh/$1.log" >&2
    return 1
}

sshd_start() {
    eval "SSHD_ADDR_$1=$2 SSHD_PORT_$1=$3"
    rm -f "$tmp/ssh/$1_host" "$tmp/ssh/$1_host.pub"
    ssh-keygen -q -t ed25519 -N '' -C "$1" -f "$tmp/ssh/$1_host" || return 1
    sshd_config "$1" "$2" "$3"
    sshd_run "$1"
}

sshd_stop() {
    eval "p=\$SSHD_PID_$1"
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
}

sshd_rekey() {
    sshd_stop "$1"
    eval "sshd_start $1 \$SSHD_ADDR_$1 \$SSHD_PORT_$1"
}

sshd_fingerprint() {
    ssh-keygen -l -E sha256 -f "$tmp/ssh/$1_host.pub" | cut -d' ' -f2
}
