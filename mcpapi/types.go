package mcpapi

// CreateSessionInput is create_session's arguments.
type CreateSessionInput struct {
	Project         string   `json:"project" jsonschema:"the project, by name or id"`
	Prompt          string   `json:"prompt" jsonschema:"the task for Claude: the session's first message"`
	Model           string   `json:"model,omitempty" jsonschema:"the model, if not the project's"`
	PermissionMode  string   `json:"permissionMode,omitempty" jsonschema:"default, acceptEdits, plan or bypassPermissions; the project decides which its members may pick"`
	AllowedTools    []string `json:"allowedTools,omitempty" jsonschema:"tools allowed without asking, besides the project's; none the project disallows"`
	DisallowedTools []string `json:"disallowedTools,omitempty" jsonschema:"tools to deny, besides the project's"`
	MaxTurns        int      `json:"maxTurns,omitempty" jsonschema:"the most agentic turns per message; at most the project's limit"`
	SystemPrompt    string   `json:"systemPrompt,omitempty" jsonschema:"text appended to the system prompt, after the project's"`
}

// CreateSessionOutput is create_session's result.
type CreateSessionOutput struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

// SendMessageInput is send_message's arguments.
type SendMessageInput struct {
	SessionID string `json:"sessionId" jsonschema:"a Parley session id, or the id of a Claude Code session list_sessions found on disk (source: disk)"`
	Message   string `json:"message" jsonschema:"the next message for Claude"`
}

// SendMessageOutput is send_message's result: the session the message went
// to (a new Parley session when a disk session was adopted).
type SendMessageOutput struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
	Adopted   bool   `json:"adopted,omitempty"`
}

// GetStatusInput is get_status's arguments.
type GetStatusInput struct {
	SessionID   string `json:"sessionId" jsonschema:"the session"`
	OutputLines int    `json:"outputLines,omitempty" jsonschema:"how many lines of Claude's recent text to return (default 20, at most 500)"`
}

// StatusOutput is get_status's result.
type StatusOutput struct {
	SessionID string `json:"sessionId"`
	Project   string `json:"project"`
	Title     string `json:"title"`
	// Status is running, waiting_for_input, completed, error or interrupted.
	Status        string         `json:"status"`
	Result        string         `json:"result,omitempty"`
	Output        []string       `json:"output"`
	PendingInputs []PendingInput `json:"pendingInputs"`
	ToolsUsed     []string       `json:"toolsUsed"`
	CostUSD       float64        `json:"costUsd"`
	Turns         int            `json:"turns"`
	URL           string         `json:"url,omitempty"`
}

// PendingInput is an open ask of a session.
type PendingInput struct {
	InputID string `json:"inputId"`
	// Type is permission, plan_review, user_question or ask_user.
	Type        string         `json:"type"`
	ToolName    string         `json:"toolName,omitempty"`
	ToolInput   map[string]any `json:"toolInput,omitempty"`
	Description string         `json:"description"`
	Questions   []Question     `json:"questions,omitempty"`
}

// Question is one question of an ask, for respond's answers.
type Question struct {
	Question    string   `json:"question"`
	Header      string   `json:"header,omitempty"`
	Options     []string `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Optional    bool     `json:"optional,omitempty"`
}

// RespondInput is respond's arguments.
type RespondInput struct {
	SessionID    string         `json:"sessionId" jsonschema:"the session"`
	InputID      string         `json:"inputId" jsonschema:"the pending input, from get_status"`
	Decision     string         `json:"decision" jsonschema:"allow (approve, or answer a question) or deny (refuse, or decline a question)"`
	Reason       string         `json:"reason,omitempty" jsonschema:"why, for a deny: Claude reads it"`
	UpdatedInput map[string]any `json:"updatedInput,omitempty" jsonschema:"for a Bash permission: {\"command\": the command to run instead}; for a plan: {\"mode\": \"default\" or \"acceptEdits\"}"`
	Answers      map[string]any `json:"answers,omitempty" jsonschema:"for a question: the answer to each question keyed by its text (or header, or index from 0): an option label, a list of labels, or free text"`
}

// ListSessionsInput is list_sessions's arguments.
type ListSessionsInput struct {
	Project string `json:"project,omitempty" jsonschema:"only this project, by name or id"`
	Limit   int    `json:"limit,omitempty" jsonschema:"the most sessions to return (default 50, at most 500)"`
}

// ListSessionsOutput is list_sessions's result.
type ListSessionsOutput struct {
	Sessions []SessionSummary `json:"sessions"`
}

// SessionSummary is one session in list_sessions.
type SessionSummary struct {
	SessionID string `json:"sessionId"`
	Project   string `json:"project"`
	ProjectID int64  `json:"projectId"`
	Title     string `json:"title"`
	Status    string `json:"status"`
	// Source is parley for Parley's sessions and disk for Claude Code
	// sessions found in the project's CLI state that Parley did not start;
	// send_message adopts those.
	Source    string `json:"source"`
	UpdatedAt string `json:"updatedAt"`
}

// InterruptInput is interrupt's arguments.
type InterruptInput struct {
	SessionID string `json:"sessionId" jsonschema:"the session whose current turn to stop"`
}

// Done is the result of tools that only succeed or fail.
type Done struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}
