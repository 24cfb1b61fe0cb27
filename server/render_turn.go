package server

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"parley/store"
	"parley/streamjson"
	"parley/views"
)

// turnView reads a result event into a turn's figures.
func turnView(e store.Event) views.Turn {
	var res streamjson.Result
	_ = json.Unmarshal(e.Payload, &res)
	t := views.Turn{Seq: e.Seq, OK: !res.IsError, Turns: res.NumTurns, DurationMS: res.DurationMS}
	if len(res.SinceLast) > 0 {
		models := make([]string, 0, len(res.SinceLast))
		for name, u := range res.SinceLast {
			models = append(models, name)
			t.CostUSD += u.CostUSD
			t.InputTokens += u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
			t.OutputTokens += u.OutputTokens
		}
		slices.Sort(models)
		t.Model = strings.Join(models, ", ")
	} else {
		t.CostUSD = res.TotalCostUSD
		t.InputTokens = res.Usage.InputTokens + res.Usage.CacheReadInputTokens + res.Usage.CacheCreationInputTokens
		t.OutputTokens = res.Usage.OutputTokens
	}
	// The CLI reports API errors as subtype "success" with is_error true:
	// decide on is_error.
	if !res.IsError {
		t.Title = "Done"
		return t
	}
	// The CLI adds "[ede_diagnostic] …" lines for its own debugging; they
	// say nothing to a reader.
	var errs []string
	for _, m := range res.Errors {
		if !strings.HasPrefix(m, "[ede_diagnostic]") {
			errs = append(errs, m)
		}
	}
	detail := strings.Join(errs, "; ")
	if detail == "" {
		detail = res.Result
	}
	switch {
	case res.Subtype == "error_during_execution" && detail == "":
		t.Title, t.Detail = "Stopped", "The turn was stopped."
	case res.Subtype == "error_during_execution":
		t.Title, t.Detail, t.Retry = "Stopped by an error", clip(detail), true
	case res.Subtype == "error_max_turns":
		t.Title, t.Detail, t.Retry = "Stopped at the turn limit", clip(detail), true
	default:
		t.Title, t.Detail, t.Retry = "The turn failed", clip(detail), true
		if res.APIStatus != nil {
			t.Title = "The API returned an error (HTTP " + strconv.Itoa(*res.APIStatus) + ")"
		}
	}
	return t
}

func turnResult(e store.Event) templ.Component {
	return appendTo(views.TurnResult(turnView(e)))
}
