// Package askuser lets a running claude process ask the people in a Parley
// session a question and wait for the answer.
//
// It has three parts. The MCP server ([Serve]) runs as `parley mcp-askuser`,
// a stdio child of the claude CLI, and offers the tool ask_user. Each call is
// relayed by [Client] as one held HTTP POST to the Parley server, where
// [RelayHandler] finds the run by its bearer token (registered with a
// [Broker]) and hands the [Question] to that run's [Asker]. The run loop uses
// the Broker's pending-ask rendezvous ([Broker.Open], [Broker.Resolve]) to
// wait for the answer a person gives in the browser.
package askuser

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Config tells the MCP server where to relay questions. The Parley server
// writes one per run (see [WriteConfig]) and passes its path to the child in
// the ASK_USER_CONFIG environment variable.
type Config struct {
	// URL is the relay endpoint, e.g. http://127.0.0.1:8080/internal/ask.
	URL string `json:"url"`
	// Token identifies the run; it is sent as "Authorization: Bearer <token>".
	Token string `json:"token"`
	// TimeoutSeconds is how long the server waits for a person before it
	// answers timed_out. The client gives up 30 s after that; 0 means the
	// client has no deadline of its own.
	TimeoutSeconds int `json:"timeout_seconds"`
	// MaxTimeoutSeconds is the longest wait the model may choose for one
	// call with the tools' "timeout" argument; 0 = TimeoutSeconds.
	MaxTimeoutSeconds int `json:"max_timeout_seconds,omitempty"`
}

// MinTimeoutSeconds is the shortest wait the model may choose for a call:
// less gives no person a fair chance to read the question.
const MinTimeoutSeconds = 10

// MaxTimeout is the longest per-call timeout, in seconds, that c allows.
func (c Config) MaxTimeout() int {
	if c.MaxTimeoutSeconds > c.TimeoutSeconds {
		return c.MaxTimeoutSeconds
	}
	return c.TimeoutSeconds
}

// CheckTimeout reports whether a per-call timeout (seconds; 0 = the
// default) lies within c's bounds, naming the field when it does not.
func (c Config) CheckTimeout(sec int) error {
	if sec == 0 {
		return nil
	}
	max := c.MaxTimeout()
	if sec < MinTimeoutSeconds || (max > 0 && sec > max) {
		if max <= 0 {
			return fmt.Errorf("timeout: at least %d seconds, got %d", MinTimeoutSeconds, sec)
		}
		return fmt.Errorf("timeout: between %d and %d seconds, got %d", MinTimeoutSeconds, max, sec)
	}
	return nil
}

// NewToken returns a fresh run token: 32 random bytes, base64url without padding.
func NewToken() string {
	b := make([]byte, 32)
	// crypto/rand.Read never returns an error (it crashes the program instead
	// when the system's random source fails).
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// WriteConfig validates c and writes it as JSON to a new file in dir, readable
// only by its owner (mode 0600), and returns the file's path. It never
// overwrites an existing file.
func WriteConfig(dir string, c Config) (string, error) {
	if err := c.validate(); err != nil {
		return "", fmt.Errorf("write ask-user config: %w", err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("write ask-user config: %w", err)
	}
	path, err := WriteSecretFile(dir, "askuser-", data)
	if err != nil {
		return "", fmt.Errorf("write ask-user config: %w", err)
	}
	return path, nil
}

// WriteSecretFile writes data to a new file named prefix + a random suffix +
// ".json" in dir, readable only by its owner (mode 0600), and returns its
// path. O_EXCL: the file holds a token, so it never writes through a file
// (or a symlink) that someone else created first.
func WriteSecretFile(dir, prefix string, data []byte) (string, error) {
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	path := filepath.Join(dir, prefix+hex.EncodeToString(suffix)+".json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return path, nil
}

// LoadConfig reads a Config written by [WriteConfig]. It refuses a config
// whose URL is not on a loopback host (127.0.0.0/8, ::1 or localhost), so the
// token is never sent off the machine, and one without a token.
func LoadConfig(path string) (Config, error) {
	if path == "" {
		return Config{}, errors.New("load ask-user config: no path given (is ASK_USER_CONFIG set?)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("load ask-user config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("load ask-user config %s: %w", path, err)
	}
	if err := c.validate(); err != nil {
		return Config{}, fmt.Errorf("load ask-user config %s: %w", path, err)
	}
	return c, nil
}

func (c Config) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("url %q: scheme must be http or https", c.URL)
	}
	if !isLoopback(u.Hostname()) {
		return fmt.Errorf("url %q: host %q is not a loopback address (127.0.0.0/8, ::1 or localhost); the run token must not leave this machine", c.URL, u.Hostname())
	}
	if c.Token == "" {
		return errors.New("token: must not be empty")
	}
	if c.TimeoutSeconds < 0 {
		return fmt.Errorf("timeout_seconds: must not be negative, got %d", c.TimeoutSeconds)
	}
	if c.MaxTimeoutSeconds < 0 {
		return fmt.Errorf("max_timeout_seconds: must not be negative, got %d", c.MaxTimeoutSeconds)
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SweepConfigs removes every config file [WriteConfig] left in dir and
// returns how many it removed. Call it at start, before any run: a crash
// leaves the files of its runs behind, and their tokens are dead.
func SweepConfigs(dir string) (int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "askuser-*.json"))
	if err != nil {
		return 0, fmt.Errorf("sweep ask-user configs: %w", err)
	}
	n := 0
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("sweep ask-user configs: %w", err)
		}
		n++
	}
	return n, nil
}
