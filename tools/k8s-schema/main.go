// Command k8s-schema writes what our Rust normalizer needs to know about the Kubernetes Go
// types that Istio's kube-inject round-trips objects through, and serves as the oracle for it.
//
//	k8s-schema schema                 > schema.json     field lists of every reachable struct
//	k8s-schema normalize <cases.json> > expected.json   Go's json.Unmarshal + json.Marshal of each case
//
// The schema lists, per Go struct type, its JSON fields in declaration order (embedded structs
// flattened, as encoding/json does) with the JSON name, the omitempty/omitzero options and the
// field's shape. The Rust side walks JSON with it to drop unknown fields, add the zero values Go
// would print, and canonicalize quantities, exactly like a Go struct round trip.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	osappsv1 "github.com/openshift/api/apps/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// roots are the kinds kube-inject decodes, by apiVersion/kind.
var roots = map[string]any{
	"v1/Pod":                                corev1.Pod{},
	"v1/ReplicationController":              corev1.ReplicationController{},
	"v1/List":                               corev1.List{},
	"apps/v1/Deployment":                    appsv1.Deployment{},
	"apps/v1/DaemonSet":                     appsv1.DaemonSet{},
	"apps/v1/ReplicaSet":                    appsv1.ReplicaSet{},
	"apps/v1/StatefulSet":                   appsv1.StatefulSet{},
	"batch/v1/Job":                          batchv1.Job{},
	"batch/v1/CronJob":                      batchv1.CronJob{},
	"apps.openshift.io/v1/DeploymentConfig": osappsv1.DeploymentConfig{},
	// OpenShift's legacy API registers DeploymentConfig in the core group too.
	"v1/DeploymentConfig": osappsv1.DeploymentConfig{},
	// Types the injector serializes on their own (annotations, env vars).
	"#Container":     corev1.Container{},
	"#ContainerPort": corev1.ContainerPort{},
	"#Probe":         corev1.Probe{},
}

// Field is one JSON field of a struct.
type Field struct {
	Name      string `json:"name"`
	OmitEmpty bool   `json:"omitempty,omitempty"`
	OmitZero  bool   `json:"omitzero,omitempty"`
	Shape     *Shape `json:"shape"`
}

// Shape describes a Go type as encoding/json sees it.
type Shape struct {
	// Kind: string, bool, int, uint, float, struct, ptr, slice, map, bytes, quantity,
	// intorstring, time, raw, any.
	Kind string `json:"kind"`
	// Type names the struct (for struct), or the element's shape (ptr, slice, map).
	Type string `json:"type,omitempty"`
	Elem *Shape `json:"elem,omitempty"`
	// Go is the Go type as error messages print it (`int32`, `[]v1.Container`).
	Go string `json:"go"`
}

var (
	quantityType    = reflect.TypeOf(resource.Quantity{})
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	timeType        = reflect.TypeOf(metav1.Time{})
	microTimeType   = reflect.TypeOf(metav1.MicroTime{})
	rawType         = reflect.TypeOf(runtime.RawExtension{})
	fieldsV1Type    = reflect.TypeOf(metav1.FieldsV1{})
)

func typeName(t reflect.Type) string {
	return strings.TrimPrefix(t.PkgPath(), "k8s.io/api/") + "." + t.Name()
}

type builder struct {
	types map[string][]Field
}

func (b *builder) shape(t reflect.Type) *Shape {
	s := b.shapeOf(t)
	s.Go = t.String()
	return s
}

func (b *builder) shapeOf(t reflect.Type) *Shape {
	switch t {
	case quantityType:
		return &Shape{Kind: "quantity"}
	case intOrStringType:
		return &Shape{Kind: "intorstring"}
	case timeType, microTimeType:
		return &Shape{Kind: "time"}
	case rawType, fieldsV1Type:
		return &Shape{Kind: "raw"}
	}
	switch t.Kind() {
	case reflect.String:
		return &Shape{Kind: "string"}
	case reflect.Bool:
		return &Shape{Kind: "bool"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Shape{Kind: "int"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &Shape{Kind: "uint"}
	case reflect.Float32, reflect.Float64:
		return &Shape{Kind: "float"}
	case reflect.Ptr:
		return &Shape{Kind: "ptr", Elem: b.shape(t.Elem())}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Shape{Kind: "bytes"}
		}
		return &Shape{Kind: "slice", Elem: b.shape(t.Elem())}
	case reflect.Map:
		return &Shape{Kind: "map", Elem: b.shape(t.Elem())}
	case reflect.Struct:
		name := typeName(t)
		if _, seen := b.types[name]; !seen {
			b.types[name] = nil // mark before recursing: types can be recursive
			b.types[name] = b.fields(t)
		}
		return &Shape{Kind: "struct", Type: name}
	case reflect.Interface:
		return &Shape{Kind: "any"}
	}
	panic(fmt.Sprintf("unsupported type %v", t))
}

// fields lists the JSON fields of a struct in encoding/json's order (embedded fields inline).
func (b *builder) fields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		parts := strings.Split(tag, ",")
		name := parts[0]
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Ptr {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, b.fields(ft)...)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		field := Field{Name: name, Shape: b.shape(f.Type)}
		for _, option := range parts[1:] {
			switch option {
			case "omitempty":
				field.OmitEmpty = true
			case "omitzero":
				field.OmitZero = true
			}
		}
		out = append(out, field)
	}
	return out
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8s-schema schema | normalize CASES.json")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "schema":
		b := &builder{types: map[string][]Field{}}
		rootShapes := map[string]string{}
		for key, value := range roots {
			rootShapes[key] = b.shape(reflect.TypeOf(value)).Type
		}
		write(map[string]any{"roots": rootShapes, "types": b.types})
	case "normalize":
		normalize(os.Args[2])
	default:
		fmt.Fprintln(os.Stderr, "unknown command", os.Args[1])
		os.Exit(2)
	}
}

// normalize reads cases {"name", "root", "json"} and writes name → {"json": Go's round trip, "error"}.
func normalize(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		fail(err)
	}
	var cases []struct {
		Name string          `json:"name"`
		Root string          `json:"root"`
		JSON json.RawMessage `json:"json"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		fail(err)
	}
	out := map[string]map[string]any{}
	for _, c := range cases {
		root, ok := roots[c.Root]
		if !ok {
			fail(fmt.Errorf("case %s: unknown root %q", c.Name, c.Root))
		}
		object := reflect.New(reflect.TypeOf(root)).Interface()
		result := map[string]any{"json": nil, "error": nil}
		if err := json.Unmarshal(c.JSON, object); err != nil {
			result["error"] = err.Error()
		} else {
			text, err := json.Marshal(object)
			if err != nil {
				fail(err)
			}
			result["json"] = json.RawMessage(text)
		}
		out[c.Name] = result
	}
	write(out)
}

func write(v any) {
	text, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(text, '\n'))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "k8s-schema:", err)
	os.Exit(1)
}
