package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"parley/cgroup"
	"parley/guard"
)

// Spec is everything needed to start one claude process for a session.
type Spec struct {
	SessionID       string // Parley's session id
	ProjectID       int64  // the session's project
	ClaudeSessionID string // the CLI's session id
	Resume          bool   // --resume instead of --session-id
	Workspace       string // working directory
	ConfigDir       string // CLAUDE_CONFIG_DIR for the CLI
	AskConfigPath   string // ASK_USER_CONFIG file; "" = no ask_user MCP server
	// MCPConfigPath is a --mcp-config file that serves ask_user over HTTP
	// (askhttp.go); when set, AskConfigPath is not used.
	MCPConfigPath string
	ExtraArgs     []string
	// Home is the run's HOME (and TMPDIR under it); "" = none set.
	Home string
	// WritableDirs are directories besides Workspace, ConfigDir and Home
	// that the run may write (a worktree's base repository, for .git).
	WritableDirs []string
	// ModelURL and ModelToken are the run's ANTHROPIC_BASE_URL and
	// ANTHROPIC_API_KEY: Parley's gateway and the run's own token.
	ModelURL, ModelToken string
	// Instructions is the text appended to the CLI's system prompt (the
	// owner's prompt and the workspace's CLAUDE.md). It never goes in
	// argv: the supervisor writes it to InstructionsPath, a 0600 file
	// the sandbox gives to the run's uid, removed when the run ends.
	Instructions     string
	InstructionsPath string
	// Limits are the cgroup limits of the run's project, for all of its
	// runs together (cgroup.Manager.NewIn); a zero field is the server's.
	Limits cgroup.Limits
	// MaxFile, if not 0, lowers Config.MaxFile for this run: a project's
	// disk quota below the server's file size cap.
	MaxFile int64
}

// Config is the server-wide part of how claude is started.
type Config struct {
	ClaudeBin string // path of the claude binary
	SelfExe   string // path of the parley binary, for `parley mcp-askuser`
	// Env is the environment the CLI inherits, passed as is: build it with
	// BaseEnv so no server secret reaches a run.
	Env []string
	// Sandbox, if set, confines each run to its project's files.
	Sandbox Sandbox
	// Gateway, if set, gives each run its own model token (see Options.ModelURL).
	Gateway Gateway
	// PrimeTimeout bounds a process's prime turn (prime.go); 0 = 30 s.
	PrimeTimeout time.Duration
	// GuardExe, if set, is the parley binary whose `run-guard` starts each
	// run, so nothing of it outlives Parley (guard.go).
	GuardExe string
	// Nice, if not 0, is the niceness (1-19) each run's whole process group
	// runs at: the CLI and every tool command it starts. Parley's own
	// threads keep theirs, so a run that spins (a build, a loop in a tool
	// call) gets the CPU only after the server's sockets, run loops and
	// asks; when nothing else wants the CPU a run still gets all of it.
	// Nothing in the group can lower it again without CAP_SYS_NICE or a
	// raised RLIMIT_NICE; a Parley nicer already keeps its own. The
	// CLI itself is in the group, and on a busy machine it then prints
	// the model's stream later (measured: README, Isolation); asks and
	// answers, which a person waits for, go first, so serve's default is
	// 5 (PARLEY_RUN_NICE; docs/instant.md, CPU admission).
	Nice int
	// Cgroups, if set, gives each run a cgroup of its own, with the
	// Manager's limits on tasks, memory and CPU weight: the guard enters
	// it before it starts the CLI, and when the run ends every process
	// in it is killed, whatever group or session it made for itself
	// (setsid, the CLI's own group per Bash command).
	Cgroups *cgroup.Manager
	// OOMScore, if not 0, is the least oom_score_adj of every process of
	// a run (the guard sets it): above Parley's, so the kernel's OOM
	// killer takes a run before Parley.
	OOMScore int
	// MaxFile, if not 0, is the largest file a run may write, in bytes
	// (RLIMIT_FSIZE, which the guard sets and the run cannot raise).
	MaxFile int64
	// PIDNamespace gives each run that the sandbox gives a uid a pid
	// namespace of its own, with the guard as its pid 1 (guard.go); see
	// ProbePIDNamespace.
	PIDNamespace bool
}

// Sandbox confines a run: it gives the run's directories and files to the
// identity the run will have and sets that identity on cmd.
type Sandbox interface {
	Confine(cmd *exec.Cmd, s Spec) error
}

// settingsArgs keep the owner's settings what a run gets. Measured on
// claude 2.1.328 (a workspace with .claude/settings.json,
// .claude/settings.local.json, .mcp.json and $CLAUDE_CONFIG_DIR/settings.json,
// each with hooks and "allow Bash"):
//   - no flags: every hook of all three files runs, their allow rules apply,
//     and the .mcp.json server is spawned, even in -p mode;
//   - --setting-sources "": no settings file is read (no hook, no rule) and
//     no CLAUDE.md is loaded; --settings <json> still applies (hooks and
//     permissions in it work), as do the command-line flags;
//   - --setting-sources user|project|local: loads just that file (project
//     also loads CLAUDE.md and .mcp.json);
//   - --strict-mcp-config: only --mcp-config servers start (.mcp.json and the
//     user's MCP servers are ignored).
//
// So a run reads no settings file at all: the owner's options arrive as
// flags, and Parley reads CLAUDE.md itself (see the server's workspace code).
var settingsArgs = []string{"--setting-sources", "", "--strict-mcp-config"}

// args builds the CLI's argument list. The flags are the ones measured in
// shared/claude-cli.md: stream-json both ways keeps one process across turns,
// and --permission-prompt-tool stdio routes permission asks to stdin/stdout.
func (c Config) args(s Spec) ([]string, error) {
	args := []string{"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose", "--include-partial-messages",
		"--permission-prompt-tool", "stdio",
		// The CLI echoes each prompt when it reads it into the conversation,
		// which tells a prompt folded into the running turn (lines.go).
		"--replay-user-messages",
	}
	args = append(args, settingsArgs...)
	if s.Resume {
		args = append(args, "--resume", s.ClaudeSessionID)
	} else {
		args = append(args, "--session-id", s.ClaudeSessionID)
	}
	if s.MCPConfigPath != "" {
		args = append(args, "--mcp-config", s.MCPConfigPath, "--allowedTools", "mcp__parley__ask_user,mcp__parley__ask_user_questions")
	} else if s.AskConfigPath != "" {
		mcp, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
			"parley": map[string]any{
				"type": "stdio", "command": c.SelfExe, "args": []string{"mcp-askuser"},
				"env": map[string]string{"ASK_USER_CONFIG": s.AskConfigPath},
			},
		}})
		if err != nil {
			return nil, fmt.Errorf("mcp config: %w", err)
		}
		args = append(args, "--mcp-config", string(mcp), "--allowedTools", "mcp__parley__ask_user,mcp__parley__ask_user_questions")
	}
	if s.InstructionsPath != "" {
		// Measured on claude 2.1.328: the file's text reaches the
		// request's system prompt (TestAppendSystemPromptFile).
		args = append(args, "--append-system-prompt-file", s.InstructionsPath)
	}
	return append(args, s.ExtraArgs...), nil
}

// process is a started claude with its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	group  *cgroup.Group // the run's cgroup; nil = none
	dec    *Decoder      // stdout's; made once (decoder)
}

// decoder is p's stdout decoder: one for the process's life, so a run
// reads on exactly where a prime stopped (prime.go).
func (p *process) decoder() *Decoder {
	if p.dec == nil {
		p.dec = NewDecoder(p.stdout)
	}
	return p.dec
}

// end kills whatever is left of the process after it was waited for: its
// process group and, with a cgroup, every process in the cgroup, which
// it then removes. Nothing the run started outlives it.
func (p *process) end() error {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	if p.group == nil {
		return nil
	}
	return p.group.Remove()
}

// killWait is how long the group gets after SIGTERM before SIGKILL.
const killWait = 3 * time.Second

// start launches claude in its own process group. Cancelling ctx signals the
// whole group (the CLI's MCP children included) and WaitDelay bounds the wait.
func (c Config) start(ctx context.Context, s Spec) (*process, error) {
	args, err := c.args(s)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, c.ClaudeBin, args...)
	cmd.Dir = s.Workspace
	cmd.Env = runEnv(c.Env, s)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		// Signal the group, not just the leader: the CLI spawns MCP servers.
		// SIGTERM first so the CLI can write its transcript (an answer
		// delivered later resumes from it); exec kills the leader after
		// WaitDelay and reader() kills what is left of the group.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
	cmd.WaitDelay = killWait
	p := &process{cmd: cmd, stderr: &tailBuffer{max: 8 << 10}}
	cmd.Stderr = p.stderr
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if err := makeRunDirs(s); err != nil {
		return nil, err
	}
	if c.Sandbox != nil {
		if err := c.Sandbox.Confine(cmd, s); err != nil {
			return nil, fmt.Errorf("confine the run: %w", err)
		}
	}
	if c.Cgroups != nil {
		if p.group, err = c.Cgroups.NewIn(s.ProjectID, s.Limits); err != nil {
			return nil, fmt.Errorf("make the run's cgroup: %w", err)
		}
	}
	if s.MaxFile > 0 && (c.MaxFile == 0 || s.MaxFile < c.MaxFile) {
		c.MaxFile = s.MaxFile // c is this start's copy
	}
	c.guard(cmd, p.group)
	if err := cmd.Start(); err != nil {
		if p.group != nil {
			_ = p.group.Remove()
		}
		return nil, fmt.Errorf("start %s: %w", c.ClaudeBin, err)
	}
	if p.group != nil && c.GuardExe == "" {
		// The guard enters the cgroup before it starts the CLI. Without
		// it (tests), the process is moved in as it starts: what it
		// starts at that very moment may stay out.
		if err := p.group.Join(cmd.Process.Pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = p.group.Remove()
			return nil, err
		}
	}
	if c.Nice != 0 && c.GuardExe == "" {
		// The guard renices its group before it starts the CLI. Without
		// it (tests), the group is reniced from here, as it starts: a
		// thread or process the CLI creates at that very moment may keep
		// the old niceness. A failure leaves the run as Parley is.
		_ = guard.RaiseNice(cmd.Process.Pid, c.Nice)
	}
	return p, nil
}

// runEnv is the run's whole environment: the base, then its own variables
// (later entries win: exec keeps the last value of a repeated key).
//
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: a run holds no Anthropic
// credentials of its own (its model traffic goes through Parley's gateway
// with a run token), so the CLI's telemetry, error reports and the like
// would only leave the project around the gateway. Measured on 2.1.328,
// it also keeps 6 MiB less private memory per process (120 → 114 MiB,
// docs/performance.md); the CLI then leaves out the tools and prompt lines
// that need outside services of their own (DesignSync), and tells the
// model to keep the user's details out of requests to outside services.
func runEnv(base []string, s Spec) []string {
	env := append(append([]string{}, base...), "CLAUDE_CONFIG_DIR="+s.ConfigDir, "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	if s.AskConfigPath != "" {
		env = append(env, "ASK_USER_CONFIG="+s.AskConfigPath)
	}
	if s.Home != "" {
		env = append(env, "HOME="+s.Home, "TMPDIR="+filepath.Join(s.Home, "tmp"))
	}
	if s.ModelURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+s.ModelURL, "ANTHROPIC_API_KEY="+s.ModelToken)
	}
	return env
}

// makeRunDirs creates the run's private directories.
func makeRunDirs(s Spec) error {
	dirs := []string{s.ConfigDir}
	if s.Home != "" {
		dirs = append(dirs, s.Home, filepath.Join(s.Home, "tmp"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("run dir: %w", err)
		}
	}
	return nil
}

// exitCode reads the process's exit status after Wait.
func exitCode(cmd *exec.Cmd, waitErr error) (int, string) {
	if cmd.ProcessState == nil {
		return -1, fmt.Sprint(waitErr)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, "killed by signal " + ws.Signal().String()
	}
	code := cmd.ProcessState.ExitCode()
	return code, "exit status " + strconv.Itoa(code)
}

// tailBuffer keeps the last max bytes written to it (the CLI's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
