package views

import "strconv"

// NotificationDevice is one browser or phone a person turned notifications
// on for: Web Push sends asks to it with the tab closed.
type NotificationDevice struct {
	ID          int64
	Name        string // what the person called it ("Chrome on Android")
	Added       string // when, formatted for people
	LastUsed    string // "" = never sent to
	LastOutcome string // what the last push did: "sent", "failed: …"
}

// Notifications is the person's notifications page: their devices, quiet
// hours and whether asks also reach them by e-mail.
type Notifications struct {
	PushReady bool // the server has VAPID keys: Web Push can work
	Devices   []NotificationDevice
	// QuietFrom and QuietTo are HH:MM in TZ (an IANA zone); both empty
	// means no quiet hours.
	QuietFrom, QuietTo, TZ string
	EmailAsks              bool   // e-mail me asks I can answer
	MailReady              bool   // the server can send e-mail
	Email                  string // where the e-mail goes
	Saved                  bool   // the settings form was just saved
}

// deviceRowID is the id of a device's row (static/push.js removes it).
func deviceRowID(id int64) string { return "device-" + strconv.FormatInt(id, 10) }

// deviceID is a device id for a data- attribute.
func deviceID(id int64) string { return strconv.FormatInt(id, 10) }

// deviceUse says when a device last got a push and how it went.
func deviceUse(d NotificationDevice) string {
	if d.LastUsed == "" {
		return "Not used yet."
	}
	if d.LastOutcome == "" {
		return "Last used " + d.LastUsed + "."
	}
	return "Last used " + d.LastUsed + ": " + d.LastOutcome + "."
}
