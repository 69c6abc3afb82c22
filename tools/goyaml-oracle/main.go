// Command goyaml-oracle produces the expected output for the goyaml crate's
// differential tests by running the real Go code path Istio uses.
//
// Usage:
//
//	goyaml-oracle cases <cases.json> <expected.json>
//	goyaml-oracle unicode <out.rs>
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"unicode"

	"sigs.k8s.io/yaml"
)

type testCase struct {
	Name string `json:"name"`
	// JSON is the value to marshal; numbers keep their text.
	JSON json.RawMessage `json:"json"`
}

// convert turns decoded JSON (with json.Number) into the Go values a typed
// struct would hold: int64 or uint64 when the number text is an integer that
// fits, float64 otherwise. This mirrors serde_json's own number model.
func convert(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			t[k] = convert(x)
		}
		return t
	case []interface{}:
		for i, x := range t {
			t[i] = convert(x)
		}
		return t
	case json.Number:
		s := t.String()
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return s
		}
		return f
	default:
		return v
	}
}

func runCases(in, out string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var cases []testCase
	if err := json.Unmarshal(data, &cases); err != nil {
		return err
	}
	expected := map[string]interface{}{}
	for _, c := range cases {
		if _, dup := expected[c.Name]; dup {
			return fmt.Errorf("duplicate case name %q", c.Name)
		}
		dec := json.NewDecoder(bytes.NewReader(c.JSON))
		dec.UseNumber()
		var v interface{}
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("case %s: %w", c.Name, err)
		}
		v = convert(v)
		y, err := yaml.Marshal(v)
		if err != nil {
			expected[c.Name] = map[string]string{"error": err.Error()}
			continue
		}
		// Go's map iteration is random; where go-yaml's key order is not
		// transitive the output varies from run to run. Such a case has no
		// single expected output.
		for i := 0; i < 50; i++ {
			again, _ := yaml.Marshal(v)
			if !bytes.Equal(again, y) {
				err = fmt.Errorf("nondeterministic in Go (key order is not transitive)")
				break
			}
		}
		if err != nil {
			expected[c.Name] = map[string]string{"error": err.Error()}
			continue
		}
		expected[c.Name] = string(y)
	}
	enc, err := json.MarshalIndent(expected, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(enc, '\n'), 0o644)
}

// ranges writes the code point ranges for which pred holds.
func ranges(buf *bytes.Buffer, name, doc string, pred func(rune) bool) {
	fmt.Fprintf(buf, "/// %s\npub(crate) const %s: &[(u32, u32)] = &[\n", doc, name)
	start := rune(-1)
	for r := rune(0); r <= unicode.MaxRune+1; r++ {
		in := r <= unicode.MaxRune && pred(r)
		if in && start < 0 {
			start = r
		}
		if !in && start >= 0 {
			fmt.Fprintf(buf, "    (0x%X, 0x%X),\n", start, r-1)
			start = -1
		}
	}
	buf.WriteString("];\n")
}

func runUnicode(out string) error {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "//! Unicode tables generated from Go's `unicode` package (Unicode %s) by\n", unicode.Version)
	buf.WriteString("//! `tools/goyaml-oracle` (`regen.sh`). Do not edit by hand.\n\n")
	ranges(&buf, "LETTER", "Code points for which Go's `unicode.IsLetter` is true (inclusive ranges).", unicode.IsLetter)
	buf.WriteString("\n")
	ranges(&buf, "DIGIT", "Code points for which Go's `unicode.IsDigit` is true (inclusive ranges).", unicode.IsDigit)
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "cases":
		err = runCases(os.Args[2], os.Args[3])
	case len(os.Args) == 3 && os.Args[1] == "unicode":
		err = runUnicode(os.Args[2])
	default:
		err = fmt.Errorf("usage: goyaml-oracle cases IN OUT | goyaml-oracle unicode OUT")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "goyaml-oracle:", err)
		os.Exit(1)
	}
}
