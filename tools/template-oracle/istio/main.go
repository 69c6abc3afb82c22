// Command istio-oracle renders the Istio-flavoured oracle cases: cases whose
// "data_kind" is set. They run with Istio's own template setup: template name
// "inject", sprig.TxtFuncMap() overridden by inject.InjectionFuncmap, and (for
// the chart templates) Istio's Go data types built from small fixture files.
//
// Data kinds:
//
//	istio-sidecar  data = *inject.SidecarTemplateData built from a fixture
//	               (istio-fixtures/<fixture>.yaml, kind "sidecar")
//	istio-gateway  data = the gateway deployment controller's template input
//	               (TemplateInput + ProxyImage, AgentgatewayImage, ProxyConfig,
//	               MeshConfig, Values) built from a fixture (kind "gateway")
//	istio-json     data = the case's "data" decoded by encoding/json, as in the
//	               plain groups, but with Istio's function map and name "inject"
//	parse-only     parse only; output "" and "parse_only": true
//
// A case has either "template" (inline text) or "template_file" (path relative
// to the shared dir). A template file's text is strings.TrimSpace(file)+"\n",
// exactly as the istiod chart puts it into the istio-sidecar-injector ConfigMap.
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
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
	"google.golang.org/protobuf/proto"
	meshconfig "istio.io/api/mesh/v1alpha1"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/kube"
	"istio.io/istio/pkg/kube/inject"
	istiolog "istio.io/istio/pkg/log"
	corev1 "k8s.io/api/core/v1"
	gateway "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

type Case struct {
	Name         string          `json:"name"`
	Template     *string         `json:"template,omitempty"`
	TemplateFile string          `json:"template_file,omitempty"`
	DataKind     string          `json:"data_kind,omitempty"`
	Fixture      string          `json:"fixture,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	// ValuesFile overrides the fixture's valuesFile (path relative to the shared dir).
	ValuesFile string `json:"values_file,omitempty"`
	// TemplateConfigFile + TemplateName: the template is the string
	// templates[TemplateName] of an injector "config" YAML (path relative to the
	// shared dir), taken verbatim.
	TemplateConfigFile string `json:"template_config_file,omitempty"`
	TemplateName       string `json:"template_name,omitempty"`
}

type Result struct {
	Output    string  `json:"output"`
	Error     *string `json:"error"`
	Phase     *string `json:"phase"`
	ParseOnly bool    `json:"parse_only,omitempty"`
}

// settings shared by both fixture kinds.
type settings struct {
	// ValuesFile: the injector ConfigMap "values" JSON, path relative to the shared dir.
	ValuesFile string `json:"valuesFile"`
	// MeshFile: mesh config YAML, path relative to the shared dir, applied over
	// mesh.DefaultMeshConfig() (mesh.ApplyMeshConfigDefaults).
	MeshFile string `json:"meshFile"`
	// MeshOverlay: optional mesh YAML applied after MeshFile (mesh.ApplyMeshConfig).
	MeshOverlay string `json:"meshOverlay"`
}

type sidecarFixture struct {
	Kind string `json:"kind"`
	settings
	Pod              corev1.Pod        `json:"pod"`
	Namespace        *corev1.Namespace `json:"namespace"`
	Revision         string            `json:"revision"`
	NativeSidecars   bool              `json:"nativeSidecars"`
	CompliancePolicy string            `json:"compliancePolicy"`
}

// gatewayInput mirrors istio.io/istio/pilot/pkg/config/kube/gatewaycommon.TemplateInput
// field for field (that package is not imported to keep the build small).
type gatewayInput struct {
	*gateway.Gateway
	GatewayClass              string
	DeploymentName            string
	ServiceAccount            string
	Ports                     []corev1.ServicePort
	ServiceType               corev1.ServiceType
	ClusterID                 string
	KubeVersion               int
	Revision                  string
	NativeSidecars            bool
	ProxyUID                  int64
	ProxyGID                  int64
	CompliancePolicy          string
	InfrastructureLabels      map[string]string
	InfrastructureAnnotations map[string]string
	GatewayNameLabel          string
	IsEastWestGateway         bool
	ControllerLabel           string
}

// gatewayDerived mirrors gatewaycommon.derivedInput, the value the gateway
// deployment controller executes its templates with.
type gatewayDerived struct {
	gatewayInput
	ProxyImage        string
	AgentgatewayImage string
	ProxyConfig       *meshconfig.ProxyConfig
	MeshConfig        *meshconfig.MeshConfig
	Values            map[string]any
}

type gatewayFixture struct {
	Kind string `json:"kind"`
	settings
	Gateway gateway.Gateway `json:"gateway"`
	Input   struct {
		GatewayClass              string               `json:"GatewayClass"`
		DeploymentName            string               `json:"DeploymentName"`
		ServiceAccount            string               `json:"ServiceAccount"`
		Ports                     []corev1.ServicePort `json:"Ports"`
		ServiceType               corev1.ServiceType   `json:"ServiceType"`
		ClusterID                 string               `json:"ClusterID"`
		KubeVersion               int                  `json:"KubeVersion"`
		Revision                  string               `json:"Revision"`
		NativeSidecars            bool                 `json:"NativeSidecars"`
		CompliancePolicy          string               `json:"CompliancePolicy"`
		InfrastructureLabels      map[string]string    `json:"InfrastructureLabels"`
		InfrastructureAnnotations map[string]string    `json:"InfrastructureAnnotations"`
		GatewayNameLabel          string               `json:"GatewayNameLabel"`
		IsEastWestGateway         bool                 `json:"IsEastWestGateway"`
		ControllerLabel           string               `json:"ControllerLabel"`
	} `json:"input"`
}

var (
	sharedDir   string
	fixturesDir string
)

func main() {
	casesDir := flag.String("cases", "", "cases dir")
	expDir := flag.String("expected", "", "expected dir")
	flag.StringVar(&sharedDir, "shared", "", "shared dir (holds istio/)")
	flag.StringVar(&fixturesDir, "fixtures", "", "istio-fixtures dir")
	flag.Parse()
	if *casesDir == "" || *expDir == "" || sharedDir == "" || fixturesDir == "" {
		fmt.Fprintln(os.Stderr, "usage: istio-oracle -cases DIR -expected DIR -shared DIR -fixtures DIR")
		os.Exit(2)
	}
	// Istio's functions log warnings (e.g. fromJSON on bad input); keep the summary clean.
	for _, s := range istiolog.Scopes() {
		s.SetOutputLevel(istiolog.NoneLevel)
	}
	if err := runAll(*casesDir, *expDir); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func strp(s string) *string { return &s }

func funcs() template.FuncMap {
	return template.FuncMap(inject.InjectionFuncmap)
}

func templateText(c Case) (string, error) {
	n := 0
	for _, set := range []bool{c.Template != nil, c.TemplateFile != "", c.TemplateConfigFile != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return "", fmt.Errorf("need exactly one of template, template_file, template_config_file")
	}
	if c.Template != nil {
		return *c.Template, nil
	}
	if c.TemplateConfigFile != "" {
		raw, err := os.ReadFile(filepath.Join(sharedDir, c.TemplateConfigFile))
		if err != nil {
			return "", err
		}
		var cfg struct {
			Templates map[string]string `json:"templates"`
		}
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			return "", fmt.Errorf("%s: %v", c.TemplateConfigFile, err)
		}
		t, ok := cfg.Templates[c.TemplateName]
		if !ok {
			return "", fmt.Errorf("%s: no template %q", c.TemplateConfigFile, c.TemplateName)
		}
		return t, nil
	}
	raw, err := os.ReadFile(filepath.Join(sharedDir, c.TemplateFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(raw)) + "\n", nil
}

func render(c Case) (res Result, err error) {
	text, err := templateText(c)
	if err != nil {
		return res, err
	}
	var data any
	switch c.DataKind {
	case "parse-only":
	case "istio-json":
		if len(c.Data) > 0 {
			if err := json.Unmarshal(c.Data, &data); err != nil {
				return res, fmt.Errorf("bad data: %v", err)
			}
		}
	case "istio-sidecar":
		if data, err = sidecarData(c.Fixture, c.ValuesFile); err != nil {
			return res, err
		}
	case "istio-gateway":
		if data, err = gatewayData(c.Fixture, c.ValuesFile); err != nil {
			return res, err
		}
	default:
		return res, fmt.Errorf("unknown data_kind %q", c.DataKind)
	}
	// The same setup as inject.parseDryTemplate.
	tmpl, perr := template.New("inject").Funcs(sprig.TxtFuncMap()).Funcs(funcs()).Parse(text)
	if perr != nil {
		return Result{Error: strp(perr.Error()), Phase: strp("parse"), ParseOnly: c.DataKind == "parse-only"}, nil
	}
	if c.DataKind == "parse-only" {
		return Result{ParseOnly: true}, nil
	}
	var buf bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			res = Result{Output: buf.String(), Error: strp(fmt.Sprintf("PANIC: %v", r)), Phase: strp("exec")}
		}
	}()
	if xerr := tmpl.Execute(&buf, data); xerr != nil {
		return Result{Output: buf.String(), Error: strp(xerr.Error()), Phase: strp("exec")}, nil
	}
	return Result{Output: buf.String()}, nil
}

func readFixture(name string, v any) error {
	raw, err := os.ReadFile(filepath.Join(fixturesDir, name+".yaml"))
	if err != nil {
		return err
	}
	return yaml.UnmarshalStrict(raw, v)
}

func loadSettings(s settings) (inject.ValuesConfig, *meshconfig.MeshConfig, error) {
	var vc inject.ValuesConfig
	raw, err := os.ReadFile(filepath.Join(sharedDir, s.ValuesFile))
	if err != nil {
		return vc, nil, err
	}
	vc, err = inject.NewValuesConfig(string(raw))
	if err != nil {
		return vc, nil, fmt.Errorf("values: %v", err)
	}
	meshText, err := os.ReadFile(filepath.Join(sharedDir, s.MeshFile))
	if err != nil {
		return vc, nil, err
	}
	mc, err := mesh.ApplyMeshConfigDefaults(string(meshText))
	if err != nil {
		return vc, nil, fmt.Errorf("mesh: %v", err)
	}
	if s.MeshOverlay != "" {
		if mc, err = mesh.ApplyMeshConfig(s.MeshOverlay, mc); err != nil {
			return vc, nil, fmt.Errorf("mesh overlay: %v", err)
		}
	}
	return vc, mc, nil
}

// sidecarData builds the template data the webhook builds in inject.RunTemplate
// for a first-time injection (no previous status or overrides annotation, so
// stripping leaves ObjectMeta and Spec as they are, except the Prometheus
// annotations rule below).
func sidecarData(fixture, valuesFile string) (*inject.SidecarTemplateData, error) {
	var f sidecarFixture
	if err := readFixture(fixture, &f); err != nil {
		return nil, fmt.Errorf("fixture %s: %v", fixture, err)
	}
	if f.Kind != "sidecar" {
		return nil, fmt.Errorf("fixture %s: kind %q, want sidecar", fixture, f.Kind)
	}
	if valuesFile != "" {
		f.ValuesFile = valuesFile
	}
	vc, mc, err := loadSettings(f.settings)
	if err != nil {
		return nil, fmt.Errorf("fixture %s: %v", fixture, err)
	}
	pod := f.Pod.DeepCopy()
	if _, ok := pod.Annotations["sidecar.istio.io/status"]; ok {
		return nil, fmt.Errorf("fixture %s: re-injection fixtures are not supported", fixture)
	}
	if _, ok := pod.Annotations["proxy.istio.io/overrides"]; ok {
		return nil, fmt.Errorf("fixture %s: overrides annotation fixtures are not supported", fixture)
	}
	// Effective ProxyConfig with no ProxyConfig CRs: the mesh defaultConfig,
	// then the proxy.istio.io/config annotation on top.
	pc := proto.Clone(mc.GetDefaultConfig()).(*meshconfig.ProxyConfig)
	if a, ok := pod.Annotations["proxy.istio.io/config"]; ok {
		if pc, err = mesh.MergeProxyConfig(a, pc); err != nil {
			return nil, fmt.Errorf("fixture %s: proxy config annotation: %v", fixture, err)
		}
	}
	deployMeta, typeMeta := kube.GetDeployMetaFromPod(pod)
	uid, gid := inject.GetProxyIDs(f.Namespace)
	return &inject.SidecarTemplateData{
		TypeMeta:                 typeMeta,
		DeploymentMeta:           deployMeta,
		ObjectMeta:               pod.ObjectMeta,
		Spec:                     pod.Spec,
		ProxyConfig:              pc,
		MeshConfig:               mc,
		Values:                   vc.Map(),
		Revision:                 f.Revision,
		ProxyImage:               inject.ProxyImage(vc.Struct(), pc.Image, pod.Annotations),
		ProxyInitImage:           inject.ProxyInitImage(vc.Struct(), pod.Annotations),
		NativeSidecars:           f.NativeSidecars,
		ProxyUID:                 uid,
		ProxyGID:                 gid,
		InboundTrafficPolicyMode: inject.InboundTrafficPolicyMode(mc),
		CompliancePolicy:         f.CompliancePolicy,
	}, nil
}

func gatewayData(fixture, valuesFile string) (gatewayDerived, error) {
	var f gatewayFixture
	if err := readFixture(fixture, &f); err != nil {
		return gatewayDerived{}, fmt.Errorf("fixture %s: %v", fixture, err)
	}
	if f.Kind != "gateway" {
		return gatewayDerived{}, fmt.Errorf("fixture %s: kind %q, want gateway", fixture, f.Kind)
	}
	if valuesFile != "" {
		f.ValuesFile = valuesFile
	}
	vc, mc, err := loadSettings(f.settings)
	if err != nil {
		return gatewayDerived{}, fmt.Errorf("fixture %s: %v", fixture, err)
	}
	gw := f.Gateway.DeepCopy()
	uid, gid := inject.GetProxyIDs(nil)
	pc := proto.Clone(mc.GetDefaultConfig()).(*meshconfig.ProxyConfig)
	in := f.Input
	return gatewayDerived{
		gatewayInput: gatewayInput{
			Gateway:                   gw,
			GatewayClass:              in.GatewayClass,
			DeploymentName:            in.DeploymentName,
			ServiceAccount:            in.ServiceAccount,
			Ports:                     in.Ports,
			ServiceType:               in.ServiceType,
			ClusterID:                 in.ClusterID,
			KubeVersion:               in.KubeVersion,
			Revision:                  in.Revision,
			NativeSidecars:            in.NativeSidecars,
			ProxyUID:                  uid,
			ProxyGID:                  gid,
			CompliancePolicy:          in.CompliancePolicy,
			InfrastructureLabels:      in.InfrastructureLabels,
			InfrastructureAnnotations: in.InfrastructureAnnotations,
			GatewayNameLabel:          in.GatewayNameLabel,
			IsEastWestGateway:         in.IsEastWestGateway,
			ControllerLabel:           in.ControllerLabel,
		},
		ProxyImage:        inject.ProxyImage(vc.Struct(), pc.GetImage(), gw.Annotations),
		AgentgatewayImage: inject.AgentgatewayImage(vc.Struct(), pc.GetImage(), gw.Annotations),
		ProxyConfig:       pc,
		MeshConfig:        mc,
		Values:            vc.Map(),
	}, nil
}

func runAll(casesDir, expDir string) error {
	files, err := filepath.Glob(filepath.Join(casesDir, "*.json"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	total, totalErr := 0, 0
	for _, file := range files {
		group := strings.TrimSuffix(filepath.Base(file), ".json")
		raw, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var cases []Case
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cases); err != nil {
			return fmt.Errorf("%s: %v", file, err)
		}
		if len(cases) == 0 || cases[0].DataKind == "" {
			continue // a plain group, rendered by the main oracle
		}
		results := map[string]Result{}
		nErr := 0
		for _, c := range cases {
			if c.DataKind == "" {
				return fmt.Errorf("%s: case %q has no data_kind in an istio group", file, c.Name)
			}
			if !strings.HasPrefix(c.Name, group+"/") {
				return fmt.Errorf("%s: case name %q must start with %q", file, c.Name, group+"/")
			}
			if _, dup := results[c.Name]; dup {
				return fmt.Errorf("%s: duplicate case %q", file, c.Name)
			}
			r, err := render(c)
			if err != nil {
				return fmt.Errorf("%s: case %q: %v", file, c.Name, err)
			}
			if !utf8.ValidString(r.Output) || (r.Error != nil && !utf8.ValidString(*r.Error)) {
				return fmt.Errorf("%s: case %q produced invalid UTF-8", file, c.Name)
			}
			if r.Error != nil {
				nErr++
				if strings.HasPrefix(*r.Error, "PANIC: ") {
					fmt.Fprintf(os.Stderr, "warning: %s: unrecovered panic: %s\n", c.Name, *r.Error)
				}
			}
			results[c.Name] = r
		}
		if err := writeJSON(filepath.Join(expDir, group+".json"), results); err != nil {
			return err
		}
		fmt.Printf("%-24s %4d cases  %3d errors\n", group, len(cases), nErr)
		total += len(cases)
		totalErr += nErr
	}
	fmt.Printf("%-24s %4d cases  %3d errors\n", "TOTAL(istio)", total, totalErr)
	return nil
}

func writeJSON(path string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
