package audit

import "context"

// Source is where a request came from: its surface and client address.
// It rides in the context of an answer from the surface that took it to
// the one place answers are delivered, which records them.
type Source struct {
	Surface string
	From    string
}

type sourceKey struct{}

// WithSource returns ctx carrying src.
func WithSource(ctx context.Context, src Source) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

// SourceOf is the Source ctx carries, if any.
func SourceOf(ctx context.Context) (Source, bool) {
	src, ok := ctx.Value(sourceKey{}).(Source)
	return src, ok
}

// SurfaceOfVia is the surface of an answer by its runner.Response.Via
// (package reach sets it): "Slack", "e-mail", else a push device's name.
// Empty for an answer without Via.
func SurfaceOfVia(via string) string {
	switch via {
	case "":
		return ""
	case "Slack":
		return Slack
	case "e-mail":
		return Email
	}
	return Push
}
