# Bash completion for infertop and inferd. `make install` puts it in
# $(PREFIX)/share/bash-completion/completions/ (as infertop, and inferd as
# a link to it); or source it from ~/.bashrc.
#
# Verbs and flags come from the programs themselves (`VERB --help`, which
# tests/e2e/kit.sh keeps equal to their option tables), node names from the
# cluster file, run ids from the history. Nothing here needs the
# bash-completion package.

# The long flags a program's --help lists.
_infertop_flags() {
    "$@" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

# The verbs listed under "verbs:" in a program's --help.
_infertop_verbs() {
    "$1" --help 2>/dev/null | awk '/^verbs:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }'
}

# The value of an option given earlier on the line (-c FILE, --db PATH).
_infertop_opt() {
    local i
    for ((i = 1; i < COMP_CWORD; i++)); do
        for o in "$@"; do
            if [[ ${COMP_WORDS[i]} == "$o" ]]; then
                echo "${COMP_WORDS[i + 1]}"
                return
            fi
        done
    done
}

# Node names of the cluster file, found as infertop finds it.
_infertop_nodes() {
    local f
    f=$(_infertop_opt -c --config)
    [[ -z $f && -f ./infertop.conf ]] && f=./infertop.conf
    [[ -z $f ]] && f=${XDG_CONFIG_HOME:-$HOME/.config}/infertop/cluster.conf
    [[ -r $f ]] && sed -n 's/^[[:space:]]*\[node[[:space:]]\{1,\}\([^]]*\)\].*/\1/p' "$f"
}

# Run ids of the history, newest first.
_infertop_runs() {
    local db
    db=$(_infertop_opt --db)
    infertop history ${db:+--db "$db"} list --limit 1000 2>/dev/null | awk 'NR > 1 { print $1 }'
}

_infertop() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local verb="" i words=()
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -c | --config | --db) ((i++)) ;;
        -*) ;;
        *) verb=${COMP_WORDS[i]}; break ;;
        esac
    done
    # Values of options.
    case $prev in
    -c | --config | --db | --write-config | --out | --api-key)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --mode) words=(growth fixed soak sweep) ;;
    --status) words=(running completed failed aborted) ;;
    --what) words=(requests steps summary) ;;
    --format) words=(table csv json) ;;
    --leg) words=(growth fixed) ;;
    --by) words=(context agg-tps) ;;
    esac
    if ((${#words[@]} == 0)); then
        if [[ $cur == -* ]]; then
            if [[ -n $verb ]]; then
                words=($(_infertop_flags infertop "$verb"))
            else
                words=($({ _infertop_flags infertop; _infertop_flags infertop --readonly; } | sort -u))
            fi
        elif [[ -z $verb ]]; then
            words=($(_infertop_verbs infertop))
        else
            # The words after the verb that are not options: what they are.
            local pos=() j
            for ((j = i + 1; j < COMP_CWORD; j++)); do
                case ${COMP_WORDS[j]} in
                -c | --config | --db | --timeout | --grace | -n | --lines | --mode | --status | \
                    --model | --cluster | --grep | --since | --until | --limit | --page | --what | \
                    --format | --out | --older-than | --listen | --api-key | --by) ((j++)) ;;
                -*) ;;
                *) pos+=("${COMP_WORDS[j]}") ;;
                esac
            done
            case $verb:${#pos[@]} in
            nodes:0) words=(start stop restart status logs facts exec command) ;;
            nodes:1 | set:0) words=(all $(_infertop_nodes)) ;;
            set:*) words=(prefill_step= kv_bits=) ;;
            stress:0) words=(growth fixed soak sweep) ;;
            history:0) words=(list show compare best export prune) ;;
            history:1 | history:2)
                case ${pos[0]} in
                show | export) ((${#pos[@]} == 1)) && words=($(_infertop_runs)) ;;
                compare) words=($(_infertop_runs)) ;;
                esac
                ;;
            esac
        fi
    fi
    COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
    [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
    return 0
}

_inferd() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} words=()
    COMPREPLY=()
    case $prev in
    --model | --tokenizer | --log | --pidfile | --curve-secret | --api-key | --flags | --out | \
        --logits | --curve-key | --curve-server-key)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --curve-clients)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    --kv-bits) words=(32 16 8 4) ;;
    --prefill-step) words=(auto 64 256 512 1024) ;;
    esac
    if ((${#words[@]} == 0)); then
        if ((COMP_CWORD == 1)); then
            words=($(_infertop_verbs inferd) --help --version)
        elif [[ $cur == -* ]]; then
            words=($(_infertop_flags inferd "${COMP_WORDS[1]}"))
        fi
    fi
    COMPREPLY=($(compgen -W "${words[*]}" -- "$cur"))
    return 0
}

complete -F _infertop infertop
complete -F _inferd inferd
