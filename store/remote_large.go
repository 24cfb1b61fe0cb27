package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// maxRemoteResponse bounds the response a server reads out of a large
// object: an answer's text is at most limit.TextBytes, which JSON may
// write six bytes a byte, with room for the rest.
const maxRemoteResponse = 8 << 20

// A NOTIFY payload holds at most 8000 bytes, and an answer may hold far
// more text (limit.TextBytes, the limit of an answer on every surface): a
// request too long for a payload carries its response in a Postgres large
// object instead, which every connection of the database can read. The
// command that made it removes it once it has its result.

// stashResponse moves req's response into a large object.
func (s *Store) stashResponse(ctx context.Context, req *AnswerRequest) (unlink func(), err error) {
	var oid uint32
	if err := s.pool.QueryRow(ctx, `SELECT lo_from_bytea(0, $1)`, []byte(req.Response)).Scan(&oid); err != nil {
		return nil, fmt.Errorf("request answer: store the answer: %w", err)
	}
	req.Response, req.ResponseObject = nil, oid
	return func() {
		_, _ = s.pool.Exec(context.WithoutCancel(ctx), `SELECT lo_unlink($1)`, oid)
	}, nil
}

// loadResponse reads back a response stashResponse moved out of req. A
// response that cannot be read stays empty: the server then says it could
// not read the answer.
func (s *Store) loadResponse(ctx context.Context, req *AnswerRequest) {
	if req.ResponseObject == 0 {
		return
	}
	var b []byte
	if err := s.pool.QueryRow(ctx, `SELECT lo_get($1, 0, $2)`, req.ResponseObject, maxRemoteResponse).Scan(&b); err == nil && json.Valid(b) {
		req.Response = b
	}
}
