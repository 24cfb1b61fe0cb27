package server

// Images and files attached to a prompt (package attach): the upload and
// download routes, and a prompt that names its uploads.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/a-h/templ"

	"parley/act"
	"parley/attach"
	"parley/launch"
	"parley/limit"
	"parley/runner"
	"parley/store"
	"parley/views"
)

// isAttachUpload says the request is an upload, whose body may be a file
// (bodyLimitFor gives it attach.UploadBodyBytes).
func isAttachUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/sessions/") && strings.HasSuffix(r.URL.Path, "/attachments")
}

// errAttachUnread refuses an upload that is not the page's form.
var errAttachUnread = badRequest("Parley could not read that upload: attach the file again from the page.")

// handleAttachUpload keeps one file a member attaches to their next
// message in the session, pending until it is sent, and answers with its
// id. Viewers are refused; the kind is decided by the bytes.
func (s *Server) handleAttachUpload() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, v, err := s.authorizeSession(r.Context(), r, r.PathValue("id"), actPrompt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.allowUpload(v.ID); err != nil {
			// Drained (bounded by the upload's body limit) so that the
			// page reads the refusal rather than a reset connection.
			_, _ = io.Copy(io.Discard, r.Body)
			s.fail(w, r, err)
			return
		}
		name, declared, data, err := readUpload(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		u, err := attach.Check(name, declared, data)
		if err != nil {
			s.fail(w, r, attachRefusal(err))
			return
		}
		if err := s.checkPendingBytes(r.Context(), v.ID, int64(len(u.Data))); err != nil {
			s.fail(w, r, err)
			return
		}
		a := store.Attachment{ID: rand.Text(), SessionID: sess.ID, UserID: v.ID, Kind: u.Kind, MediaType: u.MediaType,
			Name: u.Name, Size: int64(len(u.Data)), Data: u.Data}
		ok, err := s.st.AddAttachment(r.Context(), a, attach.MaxPending)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if !ok {
			s.fail(w, r, &httpError{http.StatusTooManyRequests, "You have too many attachments waiting to be sent in this session: send or remove some first."})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(attach.Sent{ID: a.ID, Kind: a.Kind, Name: a.Name, MediaType: a.MediaType, Size: a.Size})
	})
}

// checkPendingBytes refuses an upload that would take the user's unsent
// uploads, across all sessions, over attach.MaxPendingBytes: they wait in
// the database, and a member must not be able to fill it.
func (s *Server) checkPendingBytes(ctx context.Context, userID, size int64) error {
	n, err := s.st.PendingAttachmentBytes(ctx, userID)
	if err != nil {
		return err
	}
	if n+size > attach.MaxPendingBytes {
		return &httpError{http.StatusTooManyRequests, "You have " + limit.TextSize(n) + " of attachments waiting to be sent across your sessions (the limit is " +
			limit.TextSize(attach.MaxPendingBytes) + "): send or remove some first."}
	}
	return nil
}

// readUpload reads the form's one file (field "file"), at most
// attach.MaxFileBytes of it and one byte more, to see a larger one.
func readUpload(r *http.Request) (name, declared string, data []byte, err error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return "", "", nil, errAttachUnread
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			return "", "", nil, errAttachUnread
		}
		if p.FormName() != "file" {
			continue
		}
		data, err = io.ReadAll(io.LimitReader(p, attach.MaxFileBytes+1))
		if err != nil {
			return "", "", nil, errAttachUnread
		}
		// The name as the page sent it: Part.FileName would quietly reduce
		// "../x" to "x"; attach.CleanName refuses a path instead.
		_, params, _ := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		return params["filename"], p.Header.Get("Content-Type"), data, nil
	}
}

// attachRefusal is err as the page shows it: attach's sentences as a 400.
func attachRefusal(err error) error {
	var ae *attach.Error
	if errors.As(err, &ae) {
		return badRequest(ae.Error())
	}
	return err
}

// handleAttachment serves an attachment to whoever may read its session:
// an image as itself, anything else as a download that cannot run as a
// page (CSP sandbox). A file saved into the project has no bytes here.
func (s *Server) handleAttachment() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.lookupViewer(r.Context(), r)
		if err == nil && !v.signedIn() {
			err = errSignedOut
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		a, err := s.st.GetAttachment(r.Context(), r.PathValue("aid"))
		if errors.Is(err, store.ErrNotFound) {
			err = errNotFound
		}
		if err == nil {
			_, err = s.authorizeSessionFor(r.Context(), v, a.SessionID, actView)
		}
		if err == nil && a.Data == nil {
			err = &httpError{http.StatusNotFound, "This file was saved into the project's files at " + a.Path + "; open it from there."}
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h := w.Header()
		disp := "inline"
		if a.Kind == attach.KindImage && attach.ImageType(a.Data) == a.MediaType {
			h.Set("Content-Type", a.MediaType)
			h.Set("Content-Security-Policy", "sandbox")
		} else {
			disp = "attachment"
			h.Set("Content-Type", "application/octet-stream")
			h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		}
		h.Set("Content-Disposition", mime.FormatMediaType(disp, map[string]string{"filename": a.Name}))
		h.Set("Cache-Control", "private, max-age=86400")
		_, _ = w.Write(a.Data)
	})
}

// handleAttachRemove drops an upload its member removed from the
// composer before Send (only their own, only while pending), so that it
// no longer counts against attach.MaxPending.
func (s *Server) handleAttachRemove() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := s.lookupViewer(r.Context(), r)
		if err == nil && !v.signedIn() {
			err = errSignedOut
		}
		var a store.Attachment
		if err == nil {
			a, err = s.st.GetAttachment(r.Context(), r.PathValue("aid"))
		}
		if errors.Is(err, store.ErrNotFound) {
			err = errNotFound
		}
		if err == nil {
			_, err = s.authorizeSessionFor(r.Context(), v, a.SessionID, actPrompt)
		}
		if err == nil {
			err = s.st.DropPendingAttachment(r.Context(), a.ID, v.ID)
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// promptAttached sends text with the member's pending uploads ids: the
// images as image blocks, the files saved into the session's worktree (or
// the project's workspace) and named in a text block. It checks what
// sessionActs.Prompt and Server.prompt check, then the attachments.
func (s *Server) promptAttached(ctx context.Context, u act.Actor, sessionID, text string, ids []string) error {
	sess, err := s.acts().Session(ctx, u, sessionID, act.Prompt)
	if err != nil {
		return err
	}
	if text, err = checkPrompt(text); err != nil {
		return err
	}
	ids = uniq(ids)
	if err := attach.CheckMessage(len(ids), 0); err != nil {
		return attachRefusal(err)
	}
	list, err := s.st.PendingAttachments(ctx, sess.ID, u.ID, ids)
	if errors.Is(err, store.ErrNotFound) {
		return badRequest("An attachment of this message is no longer waiting to be sent (sent already, or older than a day): remove it, attach it again and send.")
	}
	if err != nil {
		return err
	}
	var total int64
	for _, a := range list {
		total += a.Size
	}
	if err := attach.CheckMessage(len(list), total); err != nil {
		return attachRefusal(err)
	}
	if err := s.allowPrompt(u.ID); err != nil {
		return err
	}
	if err := s.refuseArchived(ctx, sess.ID); err != nil {
		return err
	}
	if err := s.checkBudget(ctx, sess); err != nil {
		return err
	}
	if err := s.checkDisk(ctx, sess.ProjectID); err != nil {
		return err
	}
	w, paths, err := s.attachedWork(ctx, sess, list)
	if err != nil {
		return err
	}
	w.Text, w.By, w.ByID = text, u.Author().Name, u.Author().ID
	pw, ok := s.runs.(interface {
		PromptWork(ctx context.Context, sessionID string, start runner.Starter, w runner.QueuedWork) error
	})
	if !ok {
		return errors.New("prompt with attachments: the runs take no content blocks")
	}
	if err := pw.PromptWork(ctx, sess.ID, s.starter(sess), w); err != nil {
		return err
	}
	return s.st.AttachmentsSent(ctx, ids, paths)
}

// attachedWork is the content blocks and the event record of list, the
// files saved first; paths maps a saved file's id to its path.
func (s *Server) attachedWork(ctx context.Context, sess store.Session, list []store.Attachment) (runner.QueuedWork, map[string]string, error) {
	var w runner.QueuedWork
	var sent, files []attach.Sent
	paths := map[string]string{}
	var base string
	var saver *attach.Saver
	var err error
	defer func() {
		if saver != nil {
			saver.Close()
		}
	}()
	for _, a := range list {
		rec := attach.Sent{ID: a.ID, Kind: a.Kind, Name: a.Name, MediaType: a.MediaType, Size: a.Size}
		if a.Kind == attach.KindImage {
			b, err := attach.ImageBlock(a.MediaType, a.Data)
			if err != nil {
				return w, nil, err
			}
			w.Content = append(w.Content, b)
		} else {
			if saver == nil {
				if base, err = s.uploadBase(ctx, sess); err != nil {
					return w, nil, err
				}
				if saver, err = attach.NewSaver(base, attach.Folder(time.Now(), a.ID)); err != nil {
					return w, nil, saveRefusal(err)
				}
			}
			if rec.Path, err = saver.Save(a.Name, a.Data); err != nil {
				return w, nil, saveRefusal(err)
			}
			paths[a.ID] = rec.Path
			files = append(files, rec)
		}
		sent = append(sent, rec)
	}
	if note := attach.FilesNote(base, files); note != "" {
		b, err := attach.TextBlock(note)
		if err != nil {
			return w, nil, err
		}
		w.Content = append(w.Content, b)
	}
	rec, err := json.Marshal(sent)
	w.Attached = rec
	return w, paths, err
}

// uploadBase is where the session's files go: its worktree when it has
// one on disk, else the project's workspace.
func (s *Server) uploadBase(ctx context.Context, sess store.Session) (string, error) {
	p, err := s.st.GetProject(ctx, sess.ProjectID)
	if err != nil {
		return "", err
	}
	if wt := launch.WorktreeDir(s.cfg.DataDir, p.ID, sess.ID); isDir(wt) {
		return wt, nil
	}
	if ws := launch.WorkspaceDir(s.cfg.DataDir, p); isDir(ws) {
		return ws, nil
	}
	return launch.SyncWorkspace(s.cfg.DataDir, p) // made with the project; made again if gone
}

func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// saveRefusal says why the files were not saved.
func saveRefusal(err error) error {
	if errors.Is(err, attach.ErrUnsafe) {
		return badRequest("Parley did not save the attached files: " + attach.UploadsDir + " in the project is a link or not a folder (something in the session made it so). Remove it and send again.")
	}
	return err
}

func uniq(ids []string) []string {
	seen := map[string]bool{}
	out := ids[:0:0]
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// attachBodyLimit is the body limit of an upload (bodyLimitFor), 0 for
// any other request.
func attachBodyLimit(r *http.Request) int64 {
	if isAttachUpload(r) {
		return attach.UploadBodyBytes
	}
	return 0
}

// promptAttachments is what the page shows of a prompt event's
// attachments: nothing when it has none.
func promptAttachments(e store.Event) []templ.Component {
	var p struct {
		Attachments []attach.Sent `json:"attachments"`
	}
	if json.Unmarshal(e.Payload, &p) != nil || len(p.Attachments) == 0 {
		return nil
	}
	items := make([]views.AttachedItem, 0, len(p.Attachments))
	for _, a := range p.Attachments {
		items = append(items, views.AttachedItem{ID: a.ID, Kind: a.Kind, Name: a.Name, MediaType: a.MediaType, Path: a.Path, Size: a.Size})
	}
	return []templ.Component{appendTo(views.PromptAttachments(e.Seq, items))}
}
