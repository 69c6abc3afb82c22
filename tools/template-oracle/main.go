// Command template-oracle renders a corpus of Go text/template cases with the
// real Go text/template package and sprig v3, and records the results as JSON.
//
// Usage:
//
//	template-oracle run -cases DIR -expected DIR
//	    For each DIR/<group>.json whose cases carry no "data_kind", render every
//	    case and write EXPECTED/<group>.json. Prints a summary line per group.
//	template-oracle funcs FILE...
//	    Parse each file (function checks off) and print every function
//	    identifier it uses, one per line as "<name>\t<class>" where class is
//	    builtin, sprig or other.
//	template-oracle sprig-names
//	    Print every name in sprig.TxtFuncMap(), sorted.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
)

// Case is one entry of a cases file.
type Case struct {
	Name         string          `json:"name"`
	Template     *string         `json:"template,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	TemplateFile string          `json:"template_file,omitempty"`
	DataKind     string          `json:"data_kind,omitempty"`
	Fixture      string          `json:"fixture,omitempty"`
	// Fields of the istio oracle's cases; such groups are skipped here.
	ValuesFile         string `json:"values_file,omitempty"`
	TemplateConfigFile string `json:"template_config_file,omitempty"`
	TemplateName       string `json:"template_name,omitempty"`
}

// Result is one entry of an expected file.
type Result struct {
	Output string  `json:"output"`
	Error  *string `json:"error"`
	Phase  *string `json:"phase"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: template-oracle run|funcs|sprig-names ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "run":
		fs := flag.NewFlagSet("run", flag.ExitOnError)
		casesDir := fs.String("cases", "", "directory of <group>.json case files")
		expDir := fs.String("expected", "", "directory to write <group>.json expected files")
		fs.Parse(os.Args[2:])
		if *casesDir == "" || *expDir == "" {
			fmt.Fprintln(os.Stderr, "run: -cases and -expected are required")
			os.Exit(2)
		}
		if err := runAll(*casesDir, *expDir); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
	case "funcs":
		if err := listFuncs(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
	case "sprig-names":
		names := make([]string, 0)
		for k := range sprig.TxtFuncMap() {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Println(n)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

func strp(s string) *string { return &s }

// render parses and executes one template the way the format contract says.
func render(text string, rawData json.RawMessage) (res Result) {
	var data interface{}
	if len(rawData) > 0 {
		if err := json.Unmarshal(rawData, &data); err != nil {
			panic(fmt.Sprintf("bad data JSON: %v", err))
		}
	}
	tmpl, err := template.New("t").Funcs(sprig.TxtFuncMap()).Parse(text)
	if err != nil {
		return Result{Output: "", Error: strp(err.Error()), Phase: strp("parse")}
	}
	var buf bytes.Buffer
	defer func() {
		// text/template recovers panics raised inside called functions; a
		// panic reaching here is recorded verbatim so it is not lost.
		if r := recover(); r != nil {
			res = Result{Output: buf.String(), Error: strp(fmt.Sprintf("PANIC: %v", r)), Phase: strp("exec")}
		}
	}()
	if err := tmpl.Execute(&buf, data); err != nil {
		return Result{Output: buf.String(), Error: strp(err.Error()), Phase: strp("exec")}
	}
	return Result{Output: buf.String()}
}

func runAll(casesDir, expDir string) error {
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.MkdirAll(expDir, 0o755); err != nil {
		return err
	}
	total, totalErr := 0, 0
	for _, f := range files {
		group := strings.TrimSuffix(filepath.Base(f), ".json")
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var cases []Case
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
		kinds := 0
		for _, c := range cases {
			if c.DataKind != "" || c.TemplateFile != "" {
				kinds++
			}
		}
		if kinds == len(cases) && kinds > 0 {
			continue // rendered by the istio oracle
		}
		if kinds != 0 {
			return fmt.Errorf("%s: mixes plain cases with data_kind/template_file cases", f)
		}
		results := map[string]Result{}
		nErr, nParse := 0, 0
		for _, c := range cases {
			if !strings.HasPrefix(c.Name, group+"/") {
				return fmt.Errorf("%s: case name %q must start with %q", f, c.Name, group+"/")
			}
			if _, dup := results[c.Name]; dup {
				return fmt.Errorf("%s: duplicate case name %q", f, c.Name)
			}
			if c.Template == nil {
				return fmt.Errorf("%s: case %q has no template", f, c.Name)
			}
			r := render(*c.Template, c.Data)
			if !utf8.ValidString(r.Output) || (r.Error != nil && !utf8.ValidString(*r.Error)) {
				return fmt.Errorf("%s: case %q produced invalid UTF-8, which JSON cannot carry exactly", f, c.Name)
			}
			if r.Error != nil && strings.HasPrefix(*r.Error, "PANIC: ") {
				fmt.Fprintf(os.Stderr, "warning: %s: unrecovered panic: %s\n", c.Name, *r.Error)
			}
			if r.Error != nil {
				nErr++
				if *r.Phase == "parse" {
					nParse++
				}
			}
			results[c.Name] = r
		}
		if err := writeJSON(filepath.Join(expDir, group+".json"), results); err != nil {
			return err
		}
		fmt.Printf("%-24s %4d cases  %3d errors (%d parse, %d exec)\n", group, len(cases), nErr, nParse, nErr-nParse)
		total += len(cases)
		totalErr += nErr
	}
	fmt.Printf("%-24s %4d cases  %3d errors\n", "TOTAL(plain)", total, totalErr)
	return nil
}

// writeJSON writes v pretty-printed (map keys sorted by encoding/json), without
// HTML escaping, with a trailing newline.
func writeJSON(path string, v interface{}) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

var builtins = map[string]bool{
	"and": true, "call": true, "html": true, "index": true, "slice": true, "js": true,
	"len": true, "not": true, "or": true, "print": true, "printf": true, "println": true,
	"urlquery": true, "eq": true, "ge": true, "gt": true, "le": true, "lt": true, "ne": true,
}

func listFuncs(files []string) error {
	sp := sprig.TxtFuncMap()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		t := parse.New(f)
		t.Mode = parse.SkipFuncCheck | parse.ParseComments
		trees := map[string]*parse.Tree{}
		if _, err := t.Parse(string(raw), "{{", "}}", trees); err != nil {
			fmt.Fprintf(os.Stderr, "%s: parse error: %v\n", f, err)
			continue
		}
		seen := map[string]bool{}
		for _, tr := range trees {
			walk(tr.Root, seen)
		}
		for n := range seen {
			class := "other"
			if builtins[n] {
				class = "builtin"
			} else if _, ok := sp[n]; ok {
				class = "sprig"
			}
			fmt.Printf("%s\t%s\t%s\n", n, class, f)
		}
	}
	return nil
}

func walk(n parse.Node, seen map[string]bool) {
	switch x := n.(type) {
	case nil:
	case *parse.ListNode:
		if x == nil {
			return
		}
		for _, c := range x.Nodes {
			walk(c, seen)
		}
	case *parse.ActionNode:
		walk(x.Pipe, seen)
	case *parse.PipeNode:
		if x == nil {
			return
		}
		for _, c := range x.Cmds {
			walk(c, seen)
		}
	case *parse.CommandNode:
		for _, a := range x.Args {
			walk(a, seen)
		}
	case *parse.IdentifierNode:
		seen[x.Ident] = true
	case *parse.ChainNode:
		walk(x.Node, seen)
	case *parse.IfNode:
		walk(x.Pipe, seen)
		walk(x.List, seen)
		walk(x.ElseList, seen)
	case *parse.RangeNode:
		walk(x.Pipe, seen)
		walk(x.List, seen)
		walk(x.ElseList, seen)
	case *parse.WithNode:
		walk(x.Pipe, seen)
		walk(x.List, seen)
		walk(x.ElseList, seen)
	case *parse.TemplateNode:
		walk(x.Pipe, seen)
	}
}
