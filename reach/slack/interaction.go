package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
)

// MaxBody is the largest interaction body Verify reads; a click's payload
// is a few KiB.
const MaxBody = 64 << 10

// Window is how far a request's timestamp may be from now. Slack: "If the
// difference between the current time and the value of the timestamp is
// more than five minutes, ignore the request", so a captured request cannot
// be replayed later.
const Window = 5 * time.Minute

// Errors Verify returns, for the caller to answer 401 or 413.
var (
	ErrSignature = errors.New("the request's Slack signature is missing or does not match the app's signing secret")
	ErrStale     = errors.New("the request's Slack timestamp is more than five minutes from now")
	ErrTooLarge  = errors.New("the request's body is larger than an interaction can be")
)

// Verify reads r's body and returns it if Slack signed it with secret:
// X-Slack-Signature is "v0=" + hex(HMAC-SHA256(secret, "v0:" + timestamp +
// ":" + body)), compared in constant time, and X-Slack-Request-Timestamp is
// within Window of now. slack-go also checks the window against the wall
// clock, so now is normally time.Now().
func Verify(r *http.Request, secret string, now time.Time) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("verify slack request: the connection has no signing secret")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read slack request: %w", err)
	}
	if len(body) > MaxBody {
		return nil, ErrTooLarge
	}
	ts, err := strconv.ParseInt(r.Header.Get("X-Slack-Request-Timestamp"), 10, 64)
	if err != nil {
		return nil, ErrSignature
	}
	if now.Sub(time.Unix(ts, 0)).Abs() > Window {
		return nil, ErrStale
	}
	v, err := slackapi.NewSecretsVerifier(r.Header, secret)
	if errors.Is(err, slackapi.ErrExpiredTimestamp) {
		return nil, ErrStale
	}
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrSignature, err)
	}
	if _, err := v.Write(body); err != nil {
		return nil, fmt.Errorf("verify slack request: %w", err)
	}
	if err := v.Ensure(); err != nil { // hmac.Equal: constant time
		return nil, ErrSignature
	}
	return body, nil
}

// Interaction is a click on one of an ask's buttons.
type Interaction struct {
	UserID      string // the Slack user who clicked
	TeamID      string // their workspace
	InputID     string // the ask
	Action      string // the button's action ID (reach.ActAllow …); "open" answers nothing
	Channel     string // the message's channel ID
	TS          string // the message's timestamp
	ResponseURL string
}

// ParseInteraction reads a verified interaction body: the form field
// "payload" holds a block_actions JSON payload naming the button clicked.
func ParseInteraction(body []byte) (Interaction, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return Interaction{}, fmt.Errorf("parse slack interaction form: %w", err)
	}
	payload := form.Get("payload")
	if payload == "" {
		return Interaction{}, errors.New("parse slack interaction: no payload field")
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(payload), &cb); err != nil {
		return Interaction{}, fmt.Errorf("parse slack interaction payload: %w", err)
	}
	if cb.Type != slackapi.InteractionTypeBlockActions {
		return Interaction{}, fmt.Errorf("parse slack interaction: type %q is not block_actions", cb.Type)
	}
	for _, a := range cb.ActionCallback.BlockActions {
		input, ok := strings.CutPrefix(a.BlockID, BlockPrefix)
		if !ok || input == "" || a.Value == "" {
			continue
		}
		return Interaction{
			UserID:      cb.User.ID,
			TeamID:      first(cb.Team.ID, cb.User.TeamID),
			InputID:     input,
			Action:      a.Value,
			Channel:     first(cb.Channel.ID, cb.Container.ChannelID),
			TS:          first(cb.Container.MessageTs, cb.Message.Timestamp),
			ResponseURL: cb.ResponseURL,
		}, nil
	}
	return Interaction{}, errors.New("parse slack interaction: no Parley ask button was clicked")
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
