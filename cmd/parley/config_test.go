package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md's table of variables from settings")

const (
	docPath     = "../../docs/configuration.md"
	docTableTop = "<!-- variables: generated from cmd/parley/configvars.go; go test ./cmd/parley -run TestConfigDoc -update -->"
	docTableEnd = "<!-- end of variables -->"
)

// TestConfigDoc: the table of variables in docs/configuration.md is the
// one settings makes: a variable in the code and not in the doc, in the
// doc and not in the code, or with another default or flag, fails.
func TestConfigDoc(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	top, end := strings.Index(doc, docTableTop), strings.Index(doc, docTableEnd)
	if top < 0 || end < top {
		t.Fatalf("%s has no generated table between %q and %q", docPath, docTableTop, docTableEnd)
	}
	got := doc[top+len(docTableTop) : end]
	want := "\n" + configDocTable() + "\n"
	if *update {
		if err := os.WriteFile(docPath, []byte(doc[:top+len(docTableTop)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	code, docRows := tableRows(want), tableRows(got)
	for name := range code {
		if _, ok := docRows[name]; !ok {
			t.Errorf("%s is in the code, not in the doc", name)
		}
	}
	for name, line := range docRows {
		if c, ok := code[name]; ok && defaultCell(c) != defaultCell(line) {
			t.Errorf("%s: default %s in the code, %s in the doc", name, defaultCell(c), defaultCell(line))
		}
		if _, ok := code[name]; !ok {
			t.Errorf("%s is in the doc, not in the code", name)
		}
	}
	if d := cmp.Diff(code, docRows); d != "" {
		t.Errorf("docs/configuration.md's variables differ from settings (-code +doc); run go test ./cmd/parley -run TestConfigDoc -update:\n%s", d)
	}
}

// tableRows keys a markdown table's rows by their first cell.
func tableRows(table string) map[string]string {
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		cells := strings.SplitN(line, "|", 3)
		if len(cells) == 3 {
			rows[strings.TrimSpace(cells[1])] = line
		}
	}
	return rows
}

// cells splits a table row (a cell's own | is escaped).
func cells(line string) []string {
	return strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), " | ")
}

// defaultCell is a row's default: the cell before the last.
func defaultCell(line string) string {
	c := cells(line)
	if len(c) < 3 {
		return ""
	}
	return c[len(c)-2]
}

// configDocTable is the markdown table of settings.
func configDocTable() string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | what |\n|---|---|---|---|\n")
	for _, s := range settings {
		flag, def, what := "—", "—", s.Doc
		if s.Flag != "" {
			flag = "`-" + s.Flag + "`"
		}
		switch {
		case s.DocDef != "":
			def = s.DocDef
		case s.Def != "":
			def = "`" + s.Def + "`"
		}
		if s.More != "" {
			what += ". " + s.More
		}
		if s.Cmd != "" {
			what = "(" + s.Cmd + ") " + what
		}
		b.WriteString("| `" + s.Name + "` | " + flag + " | " + def + " | " + strings.ReplaceAll(what, "|", `\|`) + " |\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// TestServeUsage: `parley serve -h` names every variable serve reads, and
// every flag it has is a row of settings with that variable.
func TestServeUsage(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"serve", "-h"}, func(string) string { return "" }, io.NopCloser(strings.NewReader("")), io.Discard, &out)
	if err != flag.ErrHelp {
		t.Fatalf("serve -h: %v, want flag.ErrHelp", err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	for _, s := range settings {
		if s.set == nil {
			continue
		}
		if !strings.Contains(out.String(), "env "+s.Name+";") {
			t.Errorf("serve -h does not name %s", s.Name)
		}
		if s.Flag != "" && !flags[s.Flag] {
			t.Errorf("serve -h does not list -%s (%s)", s.Flag, s.Name)
		}
		delete(flags, s.Flag)
	}
	for f := range flags {
		t.Errorf("serve -h lists -%s, which no row of settings has", f)
	}
}

// TestSettingsCoverEveryVariable: every PARLEY_* name the code (tests and
// test helpers aside) spells out, and every getenv("X"), is a row of
// settings or one of the internal ones below, so a variable cannot be
// added without its doc.
func TestSettingsCoverEveryVariable(t *testing.T) {
	rows := map[string]bool{}
	for _, s := range settings {
		if rows[s.Name] {
			t.Errorf("%s has two rows", s.Name)
		}
		rows[s.Name] = true
	}
	literal := regexp.MustCompile(`"(PARLEY_[A-Z0-9_]+|ANTHROPIC_[A-Z_]+)"|[Gg]etenv\("([A-Z][A-Z0-9_]+)"\)`)
	// Not the operator's: the process's own (HOME, a run's TMPDIR), the
	// CLI's, and the test suite's.
	// USER names the shell user an admin command runs as, in the audit trail.
	internal := map[string]bool{"HOME": true, "USER": true, "XDG_DATA_HOME": true, "TMPDIR": true, "ASK_USER_CONFIG": true, "PARLEY_REQUIRE_ALL": true}
	var files []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || d.Name() == "fakeapi" || d.Name() == "pgtest" || strings.HasPrefix(d.Name(), ".")) && path != "../..":
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			files = append(files, path)
		}
		return nil
	})
	if err != nil || len(files) < 50 {
		t.Fatalf("read %d files of the tree: %v", len(files), err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			name := m[1] + m[2]
			if !rows[name] && !internal[name] && !strings.HasPrefix(name, "PARLEY_TEST_") {
				t.Errorf("%s reads %s, which has no row in settings (configvars.go)", f, name)
			}
		}
	}
}

// TestSettingsDefaults: each row's default parses, and setting every
// variable to its default gives the config of an empty environment.
func TestSettingsDefaults(t *testing.T) {
	flags := map[string]bool{}
	for _, s := range settings {
		if s.Flag != "" && flags[s.Flag] {
			t.Errorf("-%s is the flag of two rows", s.Flag)
		}
		flags[s.Flag] = true
		if s.Doc == "" {
			t.Errorf("%s has no doc", s.Name)
		}
		if s.set == nil && s.Cmd == "" {
			t.Errorf("%s: no parser and no command that reads it", s.Name)
		}
	}
	empty := func(string) string { return "" }
	want, err := parseConfig("serve", nil, empty, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{}
	for _, s := range settings {
		if s.set != nil {
			defaults[s.Name] = s.defaultValue(empty)
		}
	}
	got, err := parseConfig("serve", nil, func(k string) string { return defaults[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("every variable at its default gives %+v; none set, %+v", got, want)
	}
}

// TestLogFormat: PARLEY_LOG_FORMAT=json logs one JSON object a line with
// the record's keys; text (the default) logs key=value; anything else is
// refused naming the variable.
func TestLogFormat(t *testing.T) {
	for _, tc := range []struct {
		env, want, err string
	}{
		{"", `level=INFO msg="ask opened" input_id=7`, ""},
		{"text", `level=INFO msg="ask opened" input_id=7`, ""},
		{"json", `"level":"INFO","msg":"ask opened","input_id":7}`, ""},
		{"xml", "", "PARLEY_LOG_FORMAT"},
	} {
		c, err := parseConfig("serve", nil, func(k string) string {
			return map[string]string{"PARLEY_LOG_FORMAT": tc.env, "PARLEY_LOG_LEVEL": "debug"}[k]
		}, io.Discard)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("PARLEY_LOG_FORMAT=%s: err %v, want one naming %s", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		c.logger(&b).Info("ask opened", "input_id", 7)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("PARLEY_LOG_FORMAT=%q: logged %q, want it to hold %q", tc.env, b.String(), tc.want)
		}
		if tc.env == "json" && !json.Valid(b.Bytes()) {
			t.Errorf("json log line is not JSON: %q", b.String())
		}
	}
}

// TestSettingsRefuseNonsense: every variable whose default is a number or
// a size refuses a word, with an error that names the variable, and an
// empty value is its default.
func TestSettingsRefuseNonsense(t *testing.T) {
	numeric := regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	n := 0
	for _, s := range settings {
		if s.set == nil || !numeric.MatchString(s.defaultValue(func(string) string { return "" })) {
			continue
		}
		n++
		_, err := parseConfig("serve", nil, func(k string) string {
			if k == s.Name {
				return "lots"
			}
			return ""
		}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), s.Name) {
			t.Errorf("%s=lots: err %v, want one naming %s", s.Name, err, s.Name)
		}
	}
	if n < 15 {
		t.Errorf("only %d numeric variables checked", n)
	}
}
