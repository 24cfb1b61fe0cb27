package main

import (
	"strconv"
	"time"

	"parley/cgroup"
	"parley/gateway"
	"parley/limit"
	"parley/server"
)

// settings is every environment variable Parley reads, one row each, in the
// order parseConfig reads them. `parley serve -h` and the table in
// docs/configuration.md are made from it (TestConfigDoc checks the doc;
// `go test ./cmd/parley -run TestConfigDoc -update` rewrites it).
//
// To add a variable: a row here, a field in config, and a parser
// (configparse.go has the common ones).
var settings = []setting{
	{Name: "DATABASE_URL", Flag: "database-url", DocDef: "private PostgreSQL under the data dir",
		Doc:  "the PostgreSQL URL (a password belongs here, never in the flag, which every user can read in argv); empty = a private PostgreSQL under the data directory",
		More: "It may carry pgxpool settings such as `?pool_max_conns=64` (the main pool; default 16); run loops write through a second pool of a quarter of that size (at least 4)",
		set:  text(func(c *config) *string { return &c.DatabaseURL }), bind: dbURLBind},
	{Name: "PARLEY_ADDR", Flag: "addr", Def: "127.0.0.1:8080", Doc: "address to serve the web UI on",
		set: text(func(c *config) *string { return &c.Addr }), bind: textFlag(func(c *config) *string { return &c.Addr })},
	{Name: "PARLEY_RELAY_ADDR", Flag: "relay-addr", Def: "127.0.0.1:0", Doc: "loopback address for the ask relay",
		set: text(func(c *config) *string { return &c.RelayAddr }), bind: textFlag(func(c *config) *string { return &c.RelayAddr })},
	{Name: "PARLEY_CLAUDE_BIN", Flag: "claude", DocDef: "`claude` on PATH, else installs the pinned version",
		Doc: "path of the claude binary; empty = claude on PATH, else the pinned version is installed",
		set: text(func(c *config) *string { return &c.ClaudeBin }), bind: textFlag(func(c *config) *string { return &c.ClaudeBin })},
	{Name: "PARLEY_DATA_DIR", Flag: "data-dir", DocDef: "`~/.local/share/parley`; `/var/lib/parley` as root", dynamic: defaultDataDir,
		Doc: "directory for workspaces, CLI state and the private database",
		set: text(func(c *config) *string { return &c.DataDir }), bind: textFlag(func(c *config) *string { return &c.DataDir })},
	{Name: "CLAUDE_CONFIG_DIR", Flag: "claude-config-dir", DocDef: "one per project under the data dir",
		Doc: "the CLI's config dir; set it only to share one across projects (not with per-project uids); empty = one per project under the data directory",
		set: text(func(c *config) *string { return &c.ClaudeConfigDir }), bind: textFlag(func(c *config) *string { return &c.ClaudeConfigDir })},
	{Name: "PARLEY_ASK_USER", Flag: "ask-user", Def: "on", Doc: "offer Claude the ask_user tool; off (or false) removes it from every run",
		set: onUnless(func(c *config) *bool { return &c.AskUser }, "off", "false"), bind: boolFlag(func(c *config) *bool { return &c.AskUser })},
	{Name: "PARLEY_LOG_LEVEL", Flag: "log-level", Def: "info", Doc: "debug, info, warn or error",
		set: text(func(c *config) *string { return &c.LogLevel }), bind: textFlag(func(c *config) *string { return &c.LogLevel })},
	{Name: "PARLEY_LOG_FORMAT", Flag: "log-format", Def: "text", Doc: "text (key=value lines) or json (one JSON object a line, for a log collector)",
		set: text(func(c *config) *string { return &c.LogFormat }), bind: textFlag(func(c *config) *string { return &c.LogFormat })},
	{Name: "PARLEY_SECURE_COOKIES", Flag: "secure-cookies", Def: "off", Doc: "1 (or true) marks cookies Secure even on plain HTTP, for a TLS proxy in front (they are anyway over TLS)",
		set: onIf(func(c *config) *bool { return &c.SecureCookies }, "1", "true"), bind: boolFlag(func(c *config) *bool { return &c.SecureCookies })},
	{Name: "ANTHROPIC_BASE_URL", DocDef: "`https://api.anthropic.com`", Doc: "where the model gateway forwards the runs' model requests",
		set: text(func(c *config) *string { return &c.Upstream })},
	{Name: "ANTHROPIC_API_KEY", DocDef: "none", Doc: "the real model key; only the model gateway uses it, never a run",
		set: text(func(c *config) *string { return &c.APIKey })},
	{Name: "ANTHROPIC_AUTH_TOKEN", DocDef: "none", Doc: "the real model bearer token (an AI gateway's); only the model gateway uses it, never a run",
		set: text(func(c *config) *string { return &c.AuthToken })},
	{Name: "PARLEY_ISOLATION", Flag: "isolation", Def: "auto",
		Doc: "how runs are confined: uid (per-project uids, needs root), bwrap (bubblewrap, started as the project's uid when Parley is root), auto (uid as root, else bwrap; refuses to start if neither works), off (unconfined; warned at every start)",
		set: text(func(c *config) *string { return &c.Isolation }), bind: textFlag(func(c *config) *string { return &c.Isolation })},
	{Name: "PARLEY_UID_RANGE", Flag: "uid-range", DocDef: "a random range kept for the installation",
		Doc:  "uids for projects' runs, FIRST-LAST; project N runs as FIRST+N; empty = a random range kept for this installation",
		More: "Unset, an installation picks 100,000 uids at random above 1,048,576 the first time it starts and keeps them in its database (replicas share them). At start as root, a range is refused, naming what holds it, when a user, group or subordinate id range (`/etc/passwd`, `/etc/group`, `/etc/subuid`, `/etc/subgid`) names one of its ids, another program's process runs as one, or, the first time the installation uses it, a file under `/tmp`, `/var/tmp`, `/dev/shm`, `/home` or `/run` (three levels deep, not the whole disk) belongs to one",
		set:  text(func(c *config) *string { return &c.UIDRange }), bind: textFlag(func(c *config) *string { return &c.UIDRange })},
	{Name: "PARLEY_MAX_TOKENS", Flag: "max-tokens", Def: strconv.Itoa(gateway.DefaultMaxTokens), Doc: "a model request's max_tokens above this is lowered to it at the gateway",
		set: whole(func(c *config) *int { return &c.MaxTokens }, 1, none, "a whole number of tokens of at least 1"), bind: intFlag(func(c *config) *int { return &c.MaxTokens })},
	{Name: "PARLEY_MODEL_SERVER_TOOLS", Flag: "model-server-tools", Def: "off",
		Doc: "on (or true) lets runs' model requests carry the API's server tools that reach a host the request names (mcp_servers, web_fetch); off, the gateway refuses them (a confined run's way out to the network); web_search is allowed either way, and priced",
		set: onIf(func(c *config) *bool { return &c.ServerTools }, "on", "true"), bind: boolFlag(func(c *config) *bool { return &c.ServerTools })},
	{Name: "PARLEY_PROJECT_RPM", Flag: "project-rpm", Def: strconv.Itoa(gateway.DefaultProjectRPM), Doc: "model requests a minute per project, through the gateway; 0 = no limit",
		set: whole(func(c *config) *int { return &c.ProjectRPM }, 0, none, "a number of requests a minute, 0 for no limit"), bind: intFlag(func(c *config) *int { return &c.ProjectRPM })},
	{Name: "PARLEY_USER_RPM", Flag: "user-rpm", Def: "0", Doc: "model requests a minute per member whose turn runs; 0 = no limit",
		set: whole(func(c *config) *int { return &c.UserRPM }, 0, none, "a number of requests a minute, 0 for no limit"), bind: intFlag(func(c *config) *int { return &c.UserRPM })},
	{Name: "PARLEY_ASK_TIMEOUT", Flag: "ask-timeout", Def: "300", Doc: "how long an ask_user question waits for an answer, in seconds (a project may set 30-900)",
		set: seconds(func(c *config) *time.Duration { return &c.AskTimeout }), bind: durationFlag(func(c *config) *time.Duration { return &c.AskTimeout })},
	{Name: "PARLEY_METRICS_TOKEN", DocDef: "—", Doc: "clients of /metrics that PARLEY_METRICS_LOOPBACK does not admit must send Authorization: Bearer <token>",
		set: text(func(c *config) *string { return &c.MetricsToken })},
	{Name: "PARLEY_METRICS_LOOPBACK", Def: "own", // after PARLEY_METRICS_TOKEN, which token needs
		Doc:  "which clients on this machine read /metrics without the token, when they come through no proxy: own, open or token",
		More: "`own`, processes of Parley's own user and root (a run connects from loopback too, as its project's uid, and is refused; so is a scraper running as another user: give it the token); `open`, every loopback client, runs included; `token`, none (behind a same-host proxy that adds no forwarding header; needs `PARLEY_METRICS_TOKEN`). A client through a proxy sends `Forwarded`, `X-Forwarded-For` or `X-Real-IP` and needs the token",
		set:  metricsLoopbackSet},
	{Name: "PARLEY_LEASE_TTL", Def: "15", Doc: "replicas: how long a replica that stopped answering keeps its sessions before another takes them over, in seconds (renewed every third of it)",
		set: seconds(func(c *config) *time.Duration { return &c.LeaseTTL })},
	{Name: "PARLEY_DRAIN_TIMEOUT", Flag: "drain-timeout", Def: "20", Doc: "on SIGTERM, how long turns in flight may take to finish before their sessions are handed to another replica, in seconds",
		set: seconds(func(c *config) *time.Duration { return &c.DrainTimeout }), bind: durationFlag(func(c *config) *time.Duration { return &c.DrainTimeout })},
	{Name: "PARLEY_IDLE_TIMEOUT", Flag: "idle-timeout", Def: "1800", Doc: "end a session's claude process after this many seconds with no turn and no open ask; the next message resumes it; 0 = never",
		set: seconds(func(c *config) *time.Duration { return &c.IdleTimeout }), bind: durationFlag(func(c *config) *time.Duration { return &c.IdleTimeout })},
	{Name: "PARLEY_STALL_TIMEOUT", Flag: "stall-timeout", Def: "600", Doc: "interrupt a turn that prints nothing for this many seconds, never while an ask is open; a project may set its own; 0 = never",
		set: seconds(func(c *config) *time.Duration { return &c.StallTimeout }), bind: durationFlag(func(c *config) *time.Duration { return &c.StallTimeout })},
	{Name: "PARLEY_MAX_RUNS", Flag: "max-runs", DocDef: "from memory: (memory − max(¼, 512 MB)) ÷ 220 MB, at least 1",
		dynamic: func(func(string) string) string { return strconv.Itoa(limit.DefaultMaxRuns()) },
		Doc:     "live claude processes at once; more sessions wait in line",
		set:     whole(func(c *config) *int { return &c.MaxRuns }, 1, none, ""), bind: intFlag(func(c *config) *int { return &c.MaxRuns })},
	{Name: "PARLEY_RUN_NICE", Flag: "run-nice", Def: "0", // off by default: runner.Config.Nice says why
		Doc: "CPU niceness (0-19) of every run and the tools it starts: with more, the server's own work goes first when the CPU is busy, and the CLI's stream waits",
		set: whole(func(c *config) *int { return &c.RunNice }, 0, 19, ""), bind: intFlag(func(c *config) *int { return &c.RunNice })},
	{Name: "PARLEY_SESSIONS_PER_MINUTE", Flag: "sessions-per-minute", Def: strconv.Itoa(server.DefaultLimits.SessionsPerMinute), Doc: "new sessions one user may start a minute; 0 = no limit",
		set: whole(func(c *config) *int { return &c.Limits.SessionsPerMinute }, 0, none, ""), bind: intFlag(func(c *config) *int { return &c.Limits.SessionsPerMinute })},
	{Name: "PARLEY_PROMPTS_PER_MINUTE", Flag: "prompts-per-minute", Def: strconv.Itoa(server.DefaultLimits.PromptsPerMinute), Doc: "messages (and retries) one user may send a minute; 0 = no limit",
		set: whole(func(c *config) *int { return &c.Limits.PromptsPerMinute }, 0, none, ""), bind: intFlag(func(c *config) *int { return &c.Limits.PromptsPerMinute })},
	{Name: "PARLEY_WS_PER_USER", Flag: "ws-per-user", Def: strconv.Itoa(server.DefaultLimits.WSPerUser), Doc: "WebSockets (open session pages and inbox counters) one user may hold; 0 = no limit",
		set: whole(func(c *config) *int { return &c.Limits.WSPerUser }, 0, none, ""), bind: intFlag(func(c *config) *int { return &c.Limits.WSPerUser })},
	{Name: "PARLEY_LOGINS_PER_MINUTE", Flag: "logins-per-minute", Def: strconv.Itoa(server.DefaultLimits.LoginsPerMinute), Doc: "sign-in attempts per client address a minute; 0 = no limit",
		set: whole(func(c *config) *int { return &c.Limits.LoginsPerMinute }, 0, none, ""), bind: intFlag(func(c *config) *int { return &c.Limits.LoginsPerMinute })},
	{Name: "PARLEY_RUN_TASKS", Def: strconv.Itoa(cgroup.Defaults.Tasks), Doc: "processes and threads a project's runs may hold together (its cgroup's pids.max; a fork bomb stops there), unless an admin sets the project's own; owners may only lower it; 0 = no limit",
		set: runLimit(func(dst *runLimits, got runLimits) { dst.Cgroup.Tasks = got.Cgroup.Tasks })},
	{Name: "PARLEY_RUN_MEMORY", Def: formatSize(cgroup.Defaults.Memory), Doc: "memory a project's runs may hold together (its cgroup's limit, with no swap on top: over it the kernel kills a process of that project's runs only), unless an admin sets the project's own; owners may only lower it; 0 = no limit",
		set: runLimit(func(dst *runLimits, got runLimits) { dst.Cgroup.Memory = got.Cgroup.Memory })},
	{Name: "PARLEY_RUN_CPU_WEIGHT", Def: strconv.Itoa(cgroup.Defaults.CPUWeight), Doc: "CPU weight of each project's runs (1-10000; Parley and everything else on the machine weigh 100): a preference when the CPU is busy, not a cap; admins may set a project's own, owners only lower it",
		set: runLimit(func(dst *runLimits, got runLimits) { dst.Cgroup.CPUWeight = got.Cgroup.CPUWeight })},
	{Name: "PARLEY_RUN_MAX_FILE", Def: formatSize(defaultMaxFile), Doc: "the largest file a run may write (RLIMIT_FSIZE: a write past it fails); off = none",
		More: "`off` is refused where the data dir shares a file system with PostgreSQL's data (the private one, or a local `DATABASE_URL`'s `data_directory`). It caps one file; `PARLEY_PROJECT_DISK` bounds a project's total",
		set:  runLimit(func(dst *runLimits, got runLimits) { dst.MaxFile = got.MaxFile })},
	{Name: "PARLEY_PROJECT_DISK", Def: formatSize(defaultProjectDisk), Doc: "disk a project's files may take (workspace, worktrees, home, CLI config; an admin-chosen workspace too), unless an admin sets the project's own; off = none",
		More: "Parley measures it (no link followed, no mount crossed, each file at least 4 KiB) at each run's start and every second while the project has a live run (less often if that would take more than a tenth of a CPU); over it the project's runs are stopped and its prompts refused until files are removed. Between two measurements a run may write past it. `off` is refused where the data dir shares a file system with PostgreSQL's data",
		set:  runLimit(func(dst *runLimits, got runLimits) { dst.ProjectDisk = got.ProjectDisk })},
	{Name: "PARLEY_DISK_RESERVE", DocDef: "5% of the data dir's file system, at most 2G", Doc: "free disk the data dir's file system keeps: below it every live run is stopped and prompts are refused until space is freed; off = none",
		More: "It keeps PostgreSQL's data, on the same file system, from being filled between two measurements of a project's quota. Runs may still write past it by what they write in one second",
		set:  runLimit(func(dst *runLimits, got runLimits) { dst.DiskReserve = got.DiskReserve })},

	// Read by other commands, or by the CLI.
	{Name: "PARLEY_URL", Def: "http://127.0.0.1:8080", Cmd: "mcp, asks", Doc: "the Parley server that `parley mcp` and `parley asks` (with PARLEY_TOKEN) relay to"},
	{Name: "PARLEY_TOKEN", DocDef: "—", Cmd: "mcp, asks", Doc: "the API token `parley mcp` and `parley asks` act with"},
	{Name: "PARLEY_USER", DocDef: "—", Cmd: "asks", Doc: "the email of the person listing and answering asks (or --user); else PARLEY_TOKEN and PARLEY_URL as for `parley mcp`"},
	{Name: "IS_SANDBOX", DocDef: "—", Cmd: "claude", Doc: "read by the claude CLI: as root it runs bypassPermissions only with IS_SANDBOX=1, so the settings page refuses that mode otherwise"},
}
