// Package reachweb is reach's HTTP surface: answers that come with an
// answer token (a notification's action, an e-mail's confirm page), Slack's
// interactions, and a person's push devices.
package reachweb

import (
	"html/template"
	"net/http"
	"strings"

	"parley/reach"
)

// maxForm bounds a token answer's form.
const maxForm = 8 << 10

// Answers serves the answers that carry their own credential, an answer
// token: no sign-in cookie or CSRF token is needed or looked at.
type Answers struct{ A *reach.Answerer }

// Answer is POST /reach/answer: token and action, from a service worker.
// It answers in plain text: "Answered.", "Already answered by Ann."…
func (h Answers) Answer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		token, action := r.PostFormValue("token"), r.PostFormValue("action")
		if token == "" || action == "" {
			http.Error(w, "The answer needs a token and an action.", http.StatusBadRequest)
			return
		}
		out := h.A.WithToken(r.Context(), token, action)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(out.Status)
		w.Write([]byte(out.Text))
	})
}

// Confirm is GET /reach/a/{token}?action=: an e-mail's one-click answer
// opens this page, which only shows what will be answered; its button
// POSTs. A GET never answers (mail scanners follow links).
func (h Answers) Confirm() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, action := r.PathValue("token"), r.URL.Query().Get("action")
		title, err := h.A.Preview(r.Context(), token, action)
		d := page{Token: token, Action: action}
		switch {
		case err != nil:
			d.Text = err.Error()
		default:
			d.Ask, d.Choice = title.Ask, title.Choice
		}
		show(w, http.StatusOK, d)
	})
}

// ConfirmPost is POST /reach/a/{token}: the confirm page's button.
func (h Answers) ConfirmPost() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		out := h.A.WithToken(r.Context(), r.PathValue("token"), r.PostFormValue("action"))
		show(w, out.Status, page{Text: out.Text, Done: out.Status == http.StatusOK})
	})
}

type page struct {
	Token, Action string
	Ask, Choice   string // what is asked, and the answer to confirm
	Text          string // the outcome, or why there is nothing to confirm
	Done          bool
}

var pageTmpl = template.Must(template.New("confirm").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Answer · Parley</title>
<link rel="stylesheet" href="/static/app.css"></head>
<body><header class="top"><a class="brand" href="/">Parley</a></header>
<main class="confirm-answer">
{{if .Text}}<h1>{{if .Done}}Answered{{else}}Not answered{{end}}</h1><p role="status">{{.Text}}</p>
{{else}}<h1>Answer this ask?</h1>
<blockquote>{{.Ask}}</blockquote>
<form method="post" action="/reach/a/{{.Token}}">
<input type="hidden" name="action" value="{{.Action}}">
<button type="submit">{{.Choice}}</button>
</form>{{end}}
<p><a href="/inbox">Open Parley's inbox</a></p>
</main></body></html>`))

func show(w http.ResponseWriter, status int, d page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// The token is in the URL: no other origin gets it as a Referer. Not
	// no-referrer, with which a browser sends "Origin: null" on the page's
	// own POST, which the server's Origin check refuses.
	w.Header().Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	d.Text = strings.TrimSpace(d.Text)
	pageTmpl.Execute(w, d)
}
