package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []map[string]any
	for sc.Scan() {
		line := sc.Bytes()
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		y, err := yaml.Marshal(v)
		res := map[string]any{"json": string(line), "yaml": string(y)}
		if err != nil {
			res["error"] = err.Error()
		}
		out = append(out, res)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}
