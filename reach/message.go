// Package reach brings an ask to the people who may answer it wherever
// they are: Web Push to their devices, a Slack channel, an outgoing
// webhook, e-mail. It decides who is reached first and who later
// (routing and escalation), never reaches anyone while someone who may
// answer is looking at the ask, records each delivery, and takes answers
// back through single-use answer tokens that go the same exactly-once path
// as an answer from the page.
package reach

// Message types.
const (
	TypeAsk      = "ask"      // an ask to answer
	TypeAnswered = "answered" // the ask was answered: replace what showed it
)

// Action IDs: what a notification, a Slack button or an e-mail link may do.
const (
	ActAllow   = "allow"   // allow a permission
	ActDeny    = "deny"    // deny a permission
	ActApprove = "approve" // approve a plan
	ActOpen    = "open"    // open the ask's page (no answer)
	ActChoice  = "choice:" // + the option's index: pick it (a single question)
)

// Action is one button of a notification.
type Action struct {
	ID    string `json:"action"`
	Title string `json:"title"`
}

// Message is one ask as every channel shows it, or the news that it was
// answered.
type Message struct {
	Type    string `json:"type"`
	InputID string `json:"input_id"`
	Kind    string `json:"kind,omitempty"` // question, permission, plan
	Title   string `json:"title"`
	Body    string `json:"body,omitempty"`
	Project string `json:"project,omitempty"`
	Session string `json:"session,omitempty"` // the session's title
	// URL is the ask on its session's page (absolute).
	URL string `json:"url,omitempty"`
	// Actions answer the ask; empty when answered and for a person who
	// may only view.
	Actions []Action `json:"actions,omitempty"`
	// Token is a single-use answer token for this person and this ask,
	// posted to AnswerURL with an action.
	Token     string `json:"token,omitempty"`
	AnswerURL string `json:"answer_url,omitempty"`
	// By and Via say who answered and from where (TypeAnswered).
	By  string `json:"by,omitempty"`
	Via string `json:"via,omitempty"`
}

// Answerable says the message carries actions that answer.
func (m Message) Answerable() bool {
	for _, a := range m.Actions {
		if a.ID != ActOpen {
			return true
		}
	}
	return false
}
