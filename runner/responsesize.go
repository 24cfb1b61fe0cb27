package runner

// TextBytes is how much text a member wrote into the response, counted
// against limit.TextBytes as a prompt is: the reason, an edited command
// or input, and each reply's chosen labels and free text.
func (r Response) TextBytes() int64 {
	n := len(r.Reason) + len(r.Mode) + len(r.Input)
	if r.Command != nil {
		n += len(*r.Command)
	}
	for _, rep := range r.Replies {
		n += len(rep.Text)
		for _, s := range rep.Selected {
			n += len(s)
		}
	}
	return int64(n)
}
