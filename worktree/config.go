package worktree

import (
	"context"
	"strconv"
	"strings"
)

// Parley's own git never runs a program the repository's config names.
// The repository's config (and what it includes, and a worktree's
// config.worktree) is the project's runs' to write: a member's Claude may
// plant a filter, a diff or merge driver, a monitor or a signing program
// there and leave, and every page view's diff or next session's worktree
// would run it again. Before each command Parley lists the keys the
// command would read (`git config --list --name-only -z`, as the command
// itself runs: the project's uid, in its jail) and overrides every key
// that names a program with a value that runs nothing. The overrides go
// through GIT_CONFIG_COUNT/KEY_n/VALUE_n (git 2.31+), which take
// precedence over every config file, as -c does, but carry the key apart
// from the value: a subsection name may hold '=' (which -c would split
// at) or any byte but NUL and newline. A denylist of names, not an
// allowlist of the keys Parley needs: git reads hundreds of keys that run
// nothing (core.*, user.*, branch.*), and a key that does run something
// is named by its last part, which is matched below whatever its section.
//
// diff.external and diff.<driver>.command are not emptied (git would try
// to run ""): every diff Parley runs says --no-ext-diff --no-textconv.
//
// What git reads that is not config (GIT_* variables, the system and
// global files) is fixed by the server: the environment is Parley's own
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null).

// neutral is the value a program-naming key gets, by the key's last part
// (lower case, as git lists it). "" runs nothing for these keys; the rest
// are values git treats as "none" itself.
var neutral = map[string]string{
	"clean": "", "smudge": "", "process": "", // filter.<driver>.*
	"required":             "false", // filter.<driver>.required: an emptied filter must not fail the command
	"textconv":             "",      // diff.<driver>.textconv
	"driver":               "false", // merge.<driver>.driver: a conflict, never a silent "ours"
	"fsmonitor":            "false", // core.fsmonitor
	"hookspath":            "/dev/null",
	"sshcommand":           "",
	"gitproxy":             "",
	"pager":                "cat", // git treats "cat" as no pager
	"editor":               ":",   // git treats ":" as no editor
	"askpass":              "",
	"helper":               "", // credential.helper: "" resets the list
	"program":              "", // gpg.program, gpg.<format>.program
	"gpgsign":              "false",
	"cmd":                  "", // mergetool/difftool.<name>.cmd
	"packobjectshook":      "",
	"alternaterefscommand": "",
	"uploadpack":           "", // remote.<name>.uploadpack
	"receivepack":          "",
}

// fixed are overrides every command gets, whatever the repository lists.
var fixed = [][2]string{
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
}

// overrides turns the NUL-separated key list of `git config --list
// --name-only -z` into the environment that neutralises every key in it
// that names a program, and the fixed ones.
func overrides(list string) []string {
	pairs := append([][2]string(nil), fixed...)
	for _, key := range strings.Split(list, "\x00") {
		key = strings.TrimSpace(key)
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			continue
		}
		if v, ok := neutral[strings.ToLower(key[i+1:])]; ok {
			pairs = append(pairs, [2]string{key, v})
		}
	}
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(pairs))}
	for n, p := range pairs {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"="+p[0], "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+p[1])
	}
	return env
}

// neutralised is the environment that makes a git command in dir run
// none of the programs the repository's config names (see above).
func (g *Git) neutralised(ctx context.Context, dir string) ([]string, error) {
	list, err := g.exec(ctx, dir, nil, "", "config", "--list", "--name-only", "-z")
	if err != nil {
		return nil, err
	}
	return overrides(list), nil
}
