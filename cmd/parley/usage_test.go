package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"parley/sandbox"
)

// TestUsageNamesEveryCommand: every subcommand run dispatches is in the
// usage text and in the package doc, and each of their "parley X" names
// a subcommand run dispatches.
func TestUsageNamesEveryCommand(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	dispatched := dispatchedCommands(t, f)
	if len(dispatched) < 10 {
		t.Fatalf("found %d commands in run's switch (%v): the test no longer reads it", len(dispatched), dispatched)
	}
	named := regexp.MustCompile(`(?m)^\s+parley ([a-z-]+)`)
	for _, text := range []struct{ name, body string }{{"usage", usage}, {"package doc", f.Doc.Text()}} {
		var listed []string
		for _, m := range named.FindAllStringSubmatch(text.body, -1) {
			listed = append(listed, m[1])
		}
		for _, c := range dispatched {
			if !slices.Contains(listed, c) {
				t.Errorf("the %s does not name parley %s, which run dispatches", text.name, c)
			}
		}
		for _, c := range listed {
			if !slices.Contains(dispatched, c) {
				t.Errorf("the %s names parley %s, which run does not dispatch", text.name, c)
			}
		}
	}
}

// dispatchedCommands reads the case values of run's switch on args[0].
func dispatchedCommands(t *testing.T, f *ast.File) []string {
	consts := map[string]string{"sandbox.RelayCommand": sandbox.RelayCommand}
	var cmds []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "run" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				switch e := e.(type) {
				case *ast.BasicLit:
					s, _ := strconv.Unquote(e.Value)
					if s != "help" && s != "-h" && s != "--help" {
						cmds = append(cmds, s)
					}
				case *ast.SelectorExpr:
					name := e.X.(*ast.Ident).Name + "." + e.Sel.Name
					v, ok := consts[name]
					if !ok {
						t.Errorf("case %s: add its value to dispatchedCommands", name)
					}
					cmds = append(cmds, v)
				}
			}
			return true
		})
		return false
	})
	return cmds
}
