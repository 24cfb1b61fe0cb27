package reachweb

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"parley/act"
	"parley/reach"
	"parley/store"
)

// maxSubscription bounds a PushSubscription's JSON.
const maxSubscription = 8 << 10

// MaxDevices is how many push devices one person may have: each is a URL
// Parley posts to at every ask, so they are not without bound.
const MaxDevices = 20

// Devices serves a signed-in person's push devices. The server's own
// middleware has checked the sign-in and the CSRF token before these run.
type Devices struct {
	St *store.Store
	R  *reach.Reacher
	// PublicKey is the VAPID public key ("" = this installation has no
	// push).
	PublicKey string
	// CheckEndpoint refuses an endpoint Parley must not POST to, in a
	// sentence (netguard.CheckURL with PARLEY_PUSH_HOSTS).
	CheckEndpoint func(string) error
	// Actor is the signed-in person of r.
	Actor func(ctx context.Context, r *http.Request) (act.Actor, error)
}

// subscription is PushSubscription.toJSON() and a name for the device.
type subscription struct {
	Endpoint string `json:"endpoint"`
	Keys     struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	} `json:"keys"`
	Name string `json:"name"`
}

// Key is GET /push/key: the VAPID public key for pushManager.subscribe.
func (h Devices) Key() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.PublicKey == "" {
			fail(w, http.StatusNotFound, "Push notifications are off on this Parley server.")
			return
		}
		reply(w, http.StatusOK, map[string]string{"publicKey": h.PublicKey})
	})
}

// Add is POST /push/subscriptions.
func (h Devices) Add() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := h.Actor(r.Context(), r)
		if err != nil {
			fail(w, http.StatusUnauthorized, "Sign in to turn on notifications.")
			return
		}
		if h.PublicKey == "" {
			fail(w, http.StatusNotFound, "Push notifications are off on this Parley server.")
			return
		}
		var s subscription
		r.Body = http.MaxBytesReader(w, r.Body, maxSubscription)
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			fail(w, http.StatusBadRequest, "The subscription is not a browser's PushSubscription (JSON with endpoint and keys).")
			return
		}
		if msg := checkSubscription(s); msg != "" {
			fail(w, http.StatusBadRequest, msg)
			return
		}
		if err := h.CheckEndpoint(s.Endpoint); err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
		if msg := h.full(r.Context(), a.ID, s.Endpoint); msg != "" {
			fail(w, http.StatusConflict, msg)
			return
		}
		d, err := h.St.AddPushDevice(r.Context(), store.PushDevice{UserID: a.ID, Endpoint: s.Endpoint,
			P256dh: s.Keys.P256dh, Auth: s.Keys.Auth, Name: deviceName(s.Name)})
		if errors.Is(err, store.ErrEndpointTaken) {
			fail(w, http.StatusConflict, "This push subscription is another person's device. Turn notifications off and on again in this browser to get one of your own.")
			return
		}
		if err != nil {
			fail(w, http.StatusServiceUnavailable, "The device could not be saved; try again.")
			return
		}
		reply(w, http.StatusCreated, map[string]any{"id": d.ID, "name": d.Name})
	})
}

// full says why the person uid may add no device with endpoint (they
// have MaxDevices others already), or "".
func (h Devices) full(ctx context.Context, uid int64, endpoint string) string {
	ds, err := h.St.PushDevices(ctx, uid)
	if err != nil {
		return "" // AddPushDevice will say the store failed
	}
	for _, d := range ds {
		if d.Endpoint == endpoint {
			return ""
		}
	}
	if len(ds) >= MaxDevices {
		return "You have " + strconv.Itoa(len(ds)) + " devices with notifications on, the most Parley keeps. Remove one on the notifications page first."
	}
	return ""
}

// checkSubscription says what is wrong with s, or "".
func checkSubscription(s subscription) string {
	switch {
	case s.Endpoint == "" || s.Keys.P256dh == "" || s.Keys.Auth == "":
		return "The subscription needs an endpoint and its keys p256dh and auth."
	case len(s.Endpoint) > 2048 || len(s.Keys.P256dh) > 200 || len(s.Keys.Auth) > 100:
		return "The subscription's endpoint or keys are too long."
	}
	return ""
}

// deviceName trims a device's name to a line of at most 60 characters.
func deviceName(n string) string {
	n = strings.Join(strings.Fields(n), " ")
	for utf8.RuneCountInString(n) > 60 {
		_, size := utf8.DecodeLastRuneInString(n)
		n = n[:len(n)-size]
	}
	if n == "" {
		return "browser"
	}
	return n
}

// Remove is DELETE /push/subscriptions/{id}.
func (h Devices) Remove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, id, ok := h.mine(w, r)
		if !ok {
			return
		}
		if err := h.St.DeletePushDevice(r.Context(), a.ID, id); err != nil {
			fail(w, http.StatusNotFound, "You have no such device.")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// Test is POST /push/subscriptions/{id}/test: a notification to one
// device, now.
func (h Devices) Test() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, id, ok := h.mine(w, r)
		if !ok {
			return
		}
		d, err := h.St.PushDeviceOf(r.Context(), a.ID, id)
		if err != nil {
			fail(w, http.StatusNotFound, "You have no such device.")
			return
		}
		if err := h.R.TestPush(r.Context(), d); err != nil {
			if errors.Is(err, reach.ErrGone) {
				fail(w, http.StatusGone, "The push service no longer knows this device; it was removed. Turn notifications on again on it.")
				return
			}
			fail(w, http.StatusBadGateway, "The push service refused the notification: "+err.Error())
			return
		}
		reply(w, http.StatusAccepted, map[string]string{"status": "sent"})
	})
}

// mine reads the signed-in person and the device id of the path.
func (h Devices) mine(w http.ResponseWriter, r *http.Request) (act.Actor, int64, bool) {
	a, err := h.Actor(r.Context(), r)
	if err != nil {
		fail(w, http.StatusUnauthorized, "Sign in to manage your devices.")
		return a, 0, false
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		fail(w, http.StatusNotFound, "You have no such device.")
		return a, 0, false
	}
	return a, id, true
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	reply(w, status, map[string]string{"error": msg})
}
