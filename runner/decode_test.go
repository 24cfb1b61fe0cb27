package runner

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecoder(t *testing.T) {
	huge := `{"type":"user","text":"` + strings.Repeat("x", 10<<20) + `"}`
	tests := []struct {
		name      string
		in        string
		wantTypes []string
		wantErrs  []bool
	}{
		{"known types", `{"type":"system","subtype":"init"}` + "\n" + `{"type":"result"}` + "\n", []string{"system", "result"}, []bool{false, false}},
		{"type not first key", `{"subtype":"x","type":"assistant"}` + "\n", []string{"assistant"}, []bool{false}},
		{"unknown type kept", `{"type":"from_the_future","x":1}` + "\n", []string{"from_the_future"}, []bool{false}},
		{"malformed line is not fatal", "not json\n" + `{"type":"result"}` + "\n", []string{"", "result"}, []bool{true, false}},
		{"array is not an object", "[1,2]\n", []string{""}, []bool{true}},
		{"blank lines skipped", "\n\n" + `{"type":"result"}` + "\r\n\n", []string{"result"}, []bool{false}},
		{"last line without newline", `{"type":"result"}`, []string{"result"}, []bool{false}},
		{"10 MB line", huge + "\n" + `{"type":"result"}` + "\n", []string{"user", "result"}, []bool{false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(strings.NewReader(tt.in))
			var types []string
			var errs []bool
			for {
				l, err := d.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				types = append(types, l.Type)
				errs = append(errs, l.Err != nil)
				if !json.Valid(l.Raw) {
					t.Errorf("Raw of %q is not valid JSON: the store could not keep it", l.Type)
				}
			}
			if diff := cmp.Diff(tt.wantTypes, types); diff != "" {
				t.Errorf("types (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, errs); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecoderKeepsHugeLineWhole(t *testing.T) {
	huge := `{"type":"user","text":"` + strings.Repeat("y", 10<<20) + `"}`
	l, err := NewDecoder(strings.NewReader(huge + "\n")).Next()
	if err != nil || l.Err != nil {
		t.Fatalf("Next = %v, %v", l.Err, err)
	}
	if len(l.Raw) != len(huge) {
		t.Errorf("kept %d bytes of %d", len(l.Raw), len(huge))
	}
}

func TestDecoderMalformedRecordsText(t *testing.T) {
	l, err := NewDecoder(strings.NewReader("oops \xff{\n")).Next()
	if err != nil || l.Err == nil {
		t.Fatalf("Next = %v, %v; want a malformed line", l.Err, err)
	}
	var rec struct {
		Error string
		Bytes int
		Text  string
	}
	if err := json.Unmarshal(l.Raw, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Bytes != 7 || !strings.HasPrefix(rec.Text, "oops ") || rec.Error == "" {
		t.Errorf("record = %+v", rec)
	}
}

func BenchmarkDecoder(b *testing.B) {
	line := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello there"}},"session_id":"x"}` + "\n"
	in := strings.Repeat(line, 1000)
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		d := NewDecoder(strings.NewReader(in))
		for {
			if _, err := d.Next(); err != nil {
				break
			}
		}
	}
}
