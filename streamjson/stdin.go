package streamjson

import "encoding/json"

// The lines Parley writes to the CLI's stdin (with --input-format
// stream-json), one JSON object and a newline each. A line sent during a
// turn is queued and runs after it; closing stdin ends the process (rc 0)
// once idle.

// UserTurn is a turn: {"type":"user","message":{"role":"user","content":"text"}}.
type UserTurn struct {
	Type    string      `json:"type"` // "user"
	Message UserMessage `json:"message"`
}

// UserMessage is a turn's message.
type UserMessage struct {
	Role    string `json:"role"` // "user"
	Content string `json:"content"`
}

// NewUserTurn returns the line that starts a turn with text.
func NewUserTurn(text string) UserTurn {
	return UserTurn{Type: "user", Message: UserMessage{Role: "user", Content: text}}
}

// ControlRequestLine is a control request Parley sends:
// {"type":"control_request","request_id":"<id>","request":{"subtype":"interrupt"}}
// interrupts the turn (a control_response success, then a result with
// subtype "error_during_execution"; the process survives and takes the
// next turn), and subtype "end_session" ends the process (rc 0).
type ControlRequestLine struct {
	Type      string         `json:"type"` // "control_request"
	RequestID string         `json:"request_id"`
	Request   ControlSubtype `json:"request"`
}

// ControlSubtype is the body of a control request Parley sends.
type ControlSubtype struct {
	Subtype string `json:"subtype"`
	Model   string `json:"model,omitempty"` // set_model
	Mode    string `json:"mode,omitempty"`  // set_permission_mode
	// TargetMessageUUID is the user message rewind_conversation cuts the
	// conversation back to (that message and all after it go).
	TargetMessageUUID string `json:"target_message_uuid,omitempty"`
}

// NewInterrupt returns the line that interrupts the running turn.
func NewInterrupt(requestID string) ControlRequestLine {
	return ControlRequestLine{Type: "control_request", RequestID: requestID, Request: ControlSubtype{Subtype: "interrupt"}}
}

// NewInitialize returns the line that has the CLI initialize now, as the
// Agent SDK's prewarm does, rather than on the first turn: measured on
// 2.1.328, a resumed process so readied reaches the model with its first
// message in about 60 % of the time an unreadied one takes. The CLI answers
// a control_response success listing its commands, agents and models.
func NewInitialize(requestID string) ControlRequestLine {
	return ControlRequestLine{Type: "control_request", RequestID: requestID, Request: ControlSubtype{Subtype: "initialize"}}
}

// NewRewind returns the line that cuts the conversation back to just
// before the user message uuid (the uuid of its --replay-user-messages
// echo). Measured on 2.1.328 (docs/instant.md): the CLI answers a
// control_response success {"rewound":true,"targetMessageUuid":…}; the
// message and all after it are gone from what the model is sent, and from
// what a later --resume loads (they stay in the transcript file as a
// branch nobody follows). It is refused while a turn runs.
func NewRewind(requestID, uuid string) ControlRequestLine {
	return ControlRequestLine{Type: "control_request", RequestID: requestID,
		Request: ControlSubtype{Subtype: "rewind_conversation", TargetMessageUUID: uuid}}
}

// NewSetModel returns the line that switches the live process's model
// (measured on 2.1.328, docs/cli-control.md): the CLI answers a
// control_response success {"model":"<resolved id>"} and its next model
// request uses it; "default" goes back to the CLI's default model; a name
// it cannot resolve is probed with a one-token request to that model and
// refused (subtype "error", error_code "check_failed").
func NewSetModel(requestID, model string) ControlRequestLine {
	return ControlRequestLine{Type: "control_request", RequestID: requestID, Request: ControlSubtype{Subtype: "set_model", Model: model}}
}

// NewSetPermissionMode returns the line that switches the live process's
// permission mode: success {"mode":"plan"} and a system/status event with
// "permissionMode"; bypassPermissions is refused (error_code
// "bypass_not_launched") unless the process was started with it.
func NewSetPermissionMode(requestID, mode string) ControlRequestLine {
	return ControlRequestLine{Type: "control_request", RequestID: requestID, Request: ControlSubtype{Subtype: "set_permission_mode", Mode: mode}}
}

// ControlAnswer is the CLI's answer to a control request Parley sent:
// {"type":"control_response","response":{"subtype":"success","request_id":"R",
// "response":{…}}} or {…"subtype":"error","error":"why","error_code":"…"}.
type ControlAnswer struct {
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
		ErrorCode string          `json:"error_code"`
	} `json:"response"`
}

// ControlResponse answers a control request of the CLI:
// {"type":"control_response","response":{"subtype":"success","request_id":"R",
// "response":{"behavior":"allow","updatedInput":{…}}}} or
// {…"response":{"behavior":"deny","message":"why"}} (with "interrupt":true
// to end the turn); an error answer has subtype "error" and an "error".
type ControlResponse struct {
	Type     string       `json:"type"` // "control_response"
	Response ControlReply `json:"response"`
}

// ControlReply is the body of a control response.
type ControlReply struct {
	Subtype   string `json:"subtype"` // success | error
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// NewControlSuccess returns the answer body to the control request requestID.
func NewControlSuccess(requestID string, body any) ControlResponse {
	return ControlResponse{Type: "control_response", Response: ControlReply{Subtype: "success", RequestID: requestID, Response: body}}
}

// NewControlError returns an error answer to the control request requestID.
func NewControlError(requestID, msg string) ControlResponse {
	return ControlResponse{Type: "control_response", Response: ControlReply{Subtype: "error", RequestID: requestID, Error: msg}}
}
