"""What the command model knows of programs: wrappers that run the rest of their arguments, shells,
reserved words, and the options of git, ssh and container tools that take a value."""

from __future__ import annotations

MAX_DEPTH = 6

# Commands that run the rest of their arguments as a command:
# (short options that take a value, long options that take one, operands before the command, transparent).
# Transparent wrappers change how a command runs, not what it is: capture looks past them.
# `NAME=value` words before the command (`env A=1 cmd`, `sudo A=1 cmd`) are skipped for all of them.
_NONE: frozenset[str] = frozenset()
_WRAPPERS: dict[str, tuple[str, frozenset[str], int, bool]] = {
    "sudo": ("CDghpRrTtUu", frozenset({"--chdir", "--close-from", "--group", "--host", "--prompt", "--chroot",
                                       "--role", "--type", "--command-timeout", "--other-user", "--user"}),
             0, True),
    "doas": ("Cu", _NONE, 0, True),
    "pkexec": ("", frozenset({"--user"}), 0, True),
    "env": ("uCPS", frozenset({"--unset", "--chdir", "--split-string"}), 0, True),
    "nice": ("n", frozenset({"--adjustment"}), 0, True),
    "nohup": ("", _NONE, 0, True),
    "timeout": ("sk", frozenset({"--signal", "--kill-after"}), 1, True),
    "command": ("", _NONE, 0, True),
    "builtin": ("", _NONE, 0, True),
    "exec": ("a", _NONE, 0, True),
    "time": ("fo", frozenset({"--format", "--output"}), 0, True),
    "stdbuf": ("ioe", frozenset({"--input", "--output", "--error"}), 0, True),
    "setsid": ("", _NONE, 0, True),
    "ionice": ("cnpPu", frozenset({"--class", "--classdata", "--pid", "--pgid", "--uid"}), 0, True),
    "chrt": ("TPD", _NONE, 1, True),
    "taskset": ("", _NONE, 1, True),
    "caffeinate": ("tw", _NONE, 0, True),
    "unbuffer": ("", _NONE, 0, True),
    "xvfb-run": ("nsfe", frozenset({"--server-num", "--server-args", "--auth-file", "--error-file"}),
                 0, True),
    "chronic": ("", _NONE, 0, True),
    "busybox": ("", _NONE, 0, False),
    "toybox": ("", _NONE, 0, False),
    "coproc": ("", _NONE, 0, False),
    "xargs": ("adEILnPs", frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars",
                                     "--max-lines", "--process-slot-var", "--eof", "--replace"}), 0, False),
    "runuser": ("ugGw", frozenset({"--user", "--group", "--supp-group", "--shell",
                                   "--whitelist-environment"}), 0, False),
    "flock": ("wEc", frozenset({"--timeout", "--wait", "--conflict-exit-code", "--command"}), 1, False),
    "strace": ("abeEIoOpPsSuUX", frozenset({"--output", "--attach", "--user", "--string-limit", "--trace",
                                            "--signal", "--status", "--env", "--trace-path"}), 0, False),
    "ltrace": ("aAeEfnoplsuwxLDT", frozenset({"--output", "--library", "--align", "--indent"}), 0, False),
    "nsenter": ("tSG", frozenset({"--target", "--setuid", "--setgid", "--root", "--wd"}), 0, False),
    "unshare": ("R", frozenset({"--root", "--wd", "--setuid", "--setgid", "--map-user", "--map-group",
                                "--propagation", "--setgroups"}), 0, False),
    "chroot": ("", frozenset({"--userspec", "--groups"}), 1, False),
    "systemd-run": ("uEpMHsS", frozenset({"--unit", "--property", "--description", "--slice", "--setenv",
                                          "--uid", "--gid", "--working-directory", "--machine", "--host",
                                          "--nice", "--on-calendar", "--on-active", "--timer-property",
                                          "--service-type"}), 0, False),
    "firejail": ("", _NONE, 0, False),
    "fakeroot": ("sil", _NONE, 0, False),
    "proot": ("rbwu", frozenset({"--rootfs", "--bind", "--cwd"}), 0, False),
    "watch": ("nd", frozenset({"--interval", "--differences"}), 0, False),
    "parallel": ("jSIE", frozenset({"--jobs", "--sshlogin", "--joblog", "--results", "--delay", "--timeout",
                                    "--retries", "--tmpdir", "--workdir"}), 0, False),
    "dbus-run-session": ("", frozenset({"--config-file", "--dbus-daemon"}), 0, False),
}
# Shells whose `-c` string, script file or stdin they run.
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash", "csh",
                     "tcsh"})
# Reserved words the fast path leaves in front of a command: `then rm …`, `if ! rm …`, `{ rm …`.
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!",
                       "esac"})
# `git`'s long options before the subcommand that take a value (`git --git-dir d push` is a `git push`).
_GIT_LONG_VALUES = frozenset({"--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
                              "--exec-path"})
# git configuration whose value is a shell command git runs (lower case; `*` stands for one section name).
_GIT_COMMAND_KEYS = frozenset({"core.pager", "core.editor", "core.sshcommand", "core.fsmonitor",
                               "core.askpass", "sequence.editor", "diff.external", "credential.helper",
                               "gpg.program", "pager.*", "diff.*.textconv", "diff.*.command",
                               "filter.*.clean", "filter.*.smudge", "filter.*.process", "merge.*.driver",
                               "uploadpack.packobjectshook", "remote.*.receivepack", "remote.*.uploadpack",
                               "web.browser", "interactive.difffilter", "sendemail.sendmailcmd"})
# Environment variables whose value a program runs as a shell command.
_COMMAND_VARIABLES = frozenset({"GIT_PAGER", "PAGER", "MANPAGER", "GIT_EDITOR", "EDITOR", "VISUAL",
                                "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND", "GIT_SSH", "GIT_EXTERNAL_DIFF",
                                "GIT_ASKPASS", "SSH_ASKPASS", "BROWSER", "LESSOPEN", "LESSCLOSE",
                                "PROMPT_COMMAND", "BASH_ENV", "ENV", "SUDO_ASKPASS", "DIFF_VIEWER"})
# Options of `ssh` that take a value; its first operand is the host, the rest a command line.
_SSH_SHORT_VALUES = "BbcDEeFIiJLlmOoPpQRSWw"
_DOCKER_LIKE = frozenset({"docker", "podman", "nerdctl", "docker-compose", "podman-compose"})
_DOCKER_LONG_VALUES = frozenset({
    "--add-host", "--attach", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent", "--cidfile",
    "--cpu-period", "--cpu-quota", "--cpu-shares", "--cpus", "--cpuset-cpus", "--device", "--dns",
    "--entrypoint", "--env", "--env-file", "--expose", "--gpus", "--group-add", "--health-cmd", "--hostname",
    "--ip", "--ipc", "--label", "--label-file", "--link", "--log-driver", "--log-opt", "--mac-address",
    "--memory", "--memory-swap", "--mount", "--name", "--network", "--net", "--network-alias", "--pid",
    "--platform", "--publish", "--pull", "--restart", "--runtime", "--security-opt", "--shm-size",
    "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs", "--ulimit", "--user",
    "--userns", "--uts", "--volume", "--volumes-from", "--workdir", "--detach-keys", "--pod", "--arch",
})
_DOCKER_SHORT_VALUES = "aceEhlmpuvw"

_STDIN_FILES = ("/dev/stdin", "/dev/fd/", "/proc/self/fd")
_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})
# The words `echo`/`printf` print, for `echo '…' | bash`: static output, parsed as the script it is.
_PRINTERS = frozenset({"echo", "printf"})
