package views

// Outcome is how an ask ended, in a sentence naming who answered: Lead,
// then By (the answerer's name; "" for none), then Rest.
type Outcome struct {
	Lead, By, Rest string
	// ByID is the answerer's user id; 0 = not known (the page then keeps
	// the name even for the answerer).
	ByID int64
}

// String is the sentence as plain text.
func (o Outcome) String() string { return o.Lead + o.By + o.Rest }

// you is what the page shows the answerer in place of their name.
func you(first bool) string {
	if first {
		return "You"
	}
	return "you"
}
