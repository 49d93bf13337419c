#!/bin/sh
# Installs the Debian packages infertop needs to build and test, and only
# those that are missing. Idempotent: a second run installs nothing.
# Uses sudo when not run as root. Prints what it did.
set -eu

# Why each package is here (README "Dependencies" says the same):
#   build-essential pkg-config  compiler, make, library flags
#   libopenblas-dev             sgemm/sgemv for the forward pass
#   libzmq3-dev                 telemetry and control sockets
#   libjansson-dev              JSON payloads of the wire protocol
#   libssl-dev                  sha256 model fingerprints (libcrypto)
#   libpcre2-dev                tokenizers' pre-tokenizer regexes (Unicode classes)
#   libinih-dev                 cluster file (INI)
#   libncurses-dev              the console
#   libssh-dev                  driving nodes over SSH
#   libsqlite3-dev sqlite3      run history store; the sqlite3 shell for operators
#   libcriterion-dev            C unit tests
#   tmux                        end-to-end tests drive the console in tmux
#   openssh-server              end-to-end tests start real sshd on loopback
#   procps                      ps/pgrep/pkill used by the scripts
#   libmicrohttpd-dev           the HTTP server of inferd serve --http and infertop metrics
#   libcurl4-openssl-dev        infertop's HTTP client: watching llama.cpp, vLLM, Ollama and
#                               OpenAI-compatible nodes, and stress over HTTP
#   curl                        end-to-end tests call the HTTP API
#   prometheus                  tests check /metrics with promtool check metrics
#   man-db groff-base           tests render the man pages (man -l)
#   zsh                         tests run the zsh completion
#   clang-format                tests check that the sources are formatted
#   nodejs npm                  tests drive the HTTP API with the official openai npm
#                               package (npm only when no npm is on the PATH: some
#                               nodejs builds bundle their own)
PKGS="build-essential pkg-config libopenblas-dev libzmq3-dev libjansson-dev
libssl-dev libpcre2-dev libinih-dev libncurses-dev libssh-dev libsqlite3-dev sqlite3
libcriterion-dev tmux openssh-server procps libmicrohttpd-dev libcurl4-openssl-dev curl prometheus
man-db groff-base zsh clang-format nodejs"
command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "install-deps: all $(echo $PKGS | wc -w) packages present, nothing to do"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-deps: missing:$missing; not root and no sudo, install them by hand" >&2
    exit 1
fi

echo "install-deps: installing:$missing"
$SUDO apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: installed:$missing"
