package store

// SetTakeOverHeld has TakeOver call f with the takeover lock held (tests).
func SetTakeOverHeld(f func(replica string)) { takeOverHeld = f }
