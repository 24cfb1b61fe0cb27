package server

import (
	"encoding/json"

	"github.com/a-h/templ"

	"parley/store"
	"parley/views"
)

// cutOffMark says under a reply that Parley closed because its stream was
// cut off by a crash (see package transcript) that it ends there.
func cutOffMark(e store.Event) []templ.Component {
	var p struct {
		CutOff bool `json:"parley_cut_off"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || !p.CutOff {
		return nil
	}
	return []templ.Component{appendTo(views.Notice(e.Seq, "warn",
		"Parley stopped while this reply was streaming; Claude's transcript does not hold the rest of it."))}
}
