package views

// Outcome is how an ask ended, in a sentence: Text as everyone reads it
// ("Bea answered: SQLite"), You as the answerer reads it ("You answered:
// SQLite").
type Outcome struct {
	Text, You string
	// ByID is the answerer's user id; 0 = none or not known (everyone then
	// reads Text).
	ByID int64
}

// String is the sentence as everyone reads it.
func (o Outcome) String() string { return o.Text }
