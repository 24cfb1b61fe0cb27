package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
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
	ExtraArgs       []string
	// WritableDirs are directories outside Workspace the run must be able
	// to write: a session worktree's base repository, which holds its .git.
	WritableDirs []string
}

// Config is the server-wide part of how claude is started.
type Config struct {
	ClaudeBin string   // path of the claude binary
	SelfExe   string   // path of the parley binary, for `parley mcp-askuser`
	Env       []string // the environment the CLI inherits (ANTHROPIC_* and the like)
}

// args builds the CLI's argument list. The flags are the ones measured in
// shared/claude-cli.md: stream-json both ways keeps one process across turns,
// and --permission-prompt-tool stdio routes permission asks to stdin/stdout.
func (c Config) args(s Spec) ([]string, error) {
	args := []string{"-p",
		"--input-format", "stream-json",
		"--output-format", "stream-json",
		"--verbose", "--include-partial-messages",
		"--permission-prompt-tool", "stdio",
	}
	if s.Resume {
		args = append(args, "--resume", s.ClaudeSessionID)
	} else {
		args = append(args, "--session-id", s.ClaudeSessionID)
	}
	if s.AskConfigPath != "" {
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
	return append(args, s.ExtraArgs...), nil
}

// process is a started claude with its pipes.
type process struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
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
	cmd.Env = append(append([]string{}, c.Env...),
		"CLAUDE_CONFIG_DIR="+s.ConfigDir,
		"DISABLE_AUTOUPDATER=1",
	)
	if s.AskConfigPath != "" {
		cmd.Env = append(cmd.Env, "ASK_USER_CONFIG="+s.AskConfigPath)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	if err := os.MkdirAll(s.ConfigDir, 0o700); err != nil {
		return nil, fmt.Errorf("config dir: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.ClaudeBin, err)
	}
	return p, nil
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
