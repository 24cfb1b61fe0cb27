package accounts

// Audit actions of this package that package audit does not name; the
// invitation, deactivation and admin changes use audit.Invite,
// audit.Deactivate and audit.AdminChange.
const (
	ActionReactivate        = "reactivate"
	ActionInviteAccept      = "invite_accept"
	ActionPasswordResetSent = "password_reset_sent"
	ActionPasswordReset     = "password_reset"
	ActionPasswordChange    = "password_change"
	ActionSignOutEverywhere = "sign_out_everywhere"
)
