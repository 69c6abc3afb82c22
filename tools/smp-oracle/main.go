// Command smp-oracle is the differential oracle for crates/strategic-merge.
//
//	smp-oracle oracle <cases-dir> <expected-dir>
//	    For every <cases-dir>/*.json (an array of {"name","original","patch"}), run
//	    strategicpatch.StrategicMergePatch(original, patch, corev1.Pod{}) and write
//	    <expected-dir>/<file>.json: {name: {"result": <raw JSON bytes returned by Go>, "error": null|"text"}}.
//	    Panics inside the Go implementation are recovered and recorded as errors ("panic: ...").
//
//	smp-oracle schema
//	    Print the Rust source of the generated Pod type table (crates/strategic-merge/src/pod_types.rs),
//	    derived by reflection from k8s.io/api/core/v1 so that the Rust merge-key table is never written
//	    from memory.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: smp-oracle oracle <cases-dir> <expected-dir> | schema")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "oracle":
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: smp-oracle oracle <cases-dir> <expected-dir>")
			os.Exit(2)
		}
		if err := runOracle(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "schema":
		os.Stdout.WriteString(generateSchema())
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

type testCase struct {
	Name     string          `json:"name"`
	Original json.RawMessage `json:"original"`
	Patch    json.RawMessage `json:"patch"`
}

type outcome struct {
	Result json.RawMessage `json:"result"`
	Error  *string         `json:"error"`
	// Nondeterministic is set when repeated runs disagree (Go iterates maps in random order);
	// the Rust test skips such cases.
	Nondeterministic bool `json:"nondeterministic,omitempty"`
}

// runs is how many times each case is applied to detect map-order-dependent outcomes.
const runs = 16

func applyChecked(original, patch []byte) outcome {
	first := apply(original, patch)
	for i := 1; i < runs; i++ {
		o := apply(original, patch)
		if !bytes.Equal(o.Result, first.Result) || (o.Error == nil) != (first.Error == nil) ||
			(o.Error != nil && *o.Error != *first.Error) {
			return outcome{Result: json.RawMessage("null"), Nondeterministic: true}
		}
	}
	return first
}

func runOracle(casesDir, expectedDir string) error {
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	total := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var cases []testCase
		if err := json.Unmarshal(data, &cases); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		// Keep the case order of the input file in the output (an ordered object).
		var out bytes.Buffer
		out.WriteString("{\n")
		seen := map[string]bool{}
		for i, c := range cases {
			if seen[c.Name] {
				return fmt.Errorf("%s: duplicate case name %q", file, c.Name)
			}
			seen[c.Name] = true
			o := applyChecked(c.Original, c.Patch)
			name, _ := json.Marshal(c.Name)
			body, err := json.Marshal(o)
			if err != nil {
				return fmt.Errorf("%s/%s: %w", file, c.Name, err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, body, "  ", "  "); err != nil {
				return err
			}
			out.WriteString("  ")
			out.Write(name)
			out.WriteString(": ")
			out.Write(indented.Bytes())
			if i+1 < len(cases) {
				out.WriteString(",")
			}
			out.WriteString("\n")
			total++
		}
		out.WriteString("}\n")
		target := filepath.Join(expectedDir, filepath.Base(file))
		if err := os.WriteFile(target, out.Bytes(), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "smp-oracle: %d cases in %d files\n", total, len(files))
	return nil
}

func apply(original, patch []byte) (o outcome) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v", r)
			o = outcome{Result: json.RawMessage("null"), Error: &msg}
		}
	}()
	result, err := smp(original, patch)
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		return outcome{Result: json.RawMessage("null"), Error: &msg}
	}
	return outcome{Result: result}
}
