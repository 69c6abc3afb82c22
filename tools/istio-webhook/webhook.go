package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config/mesh"
	"istio.io/istio/pkg/config/mesh/meshwatcher"
	"istio.io/istio/pkg/kube/inject"
	"istio.io/istio/pkg/kube/multicluster"
)

// settings are the three configuration files both injectors read.
type settings struct {
	config, values, mesh string
}

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.config, "config", "", "injector configuration (the istio-sidecar-injector ConfigMap's `config` key)")
	fs.StringVar(&s.values, "values", "", "injector values (the ConfigMap's `values` key, JSON)")
	fs.StringVar(&s.mesh, "mesh", "", "mesh configuration (the istio ConfigMap's `mesh` key); Istio's defaults when empty")
}

func (s *settings) validate() error {
	for name, path := range map[string]string{"-config": s.config, "-values": s.values} {
		if path == "" {
			return fmt.Errorf("%s is required", name)
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s %s: %v", name, path, err)
		}
	}
	return nil
}

// newWebhook builds Istio's webhook on a fresh mux and starts its config watchers; close stop
// to end them.
func newWebhook(s settings, stop chan struct{}) (*http.ServeMux, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	meshConfig := mesh.DefaultMeshConfig()
	if s.mesh != "" {
		raw, err := os.ReadFile(s.mesh)
		if err != nil {
			return nil, fmt.Errorf("-mesh %s: %v", s.mesh, err)
		}
		meshConfig, err = mesh.ApplyMeshConfigDefaults(string(raw))
		if err != nil {
			return nil, fmt.Errorf("-mesh %s: %v", s.mesh, err)
		}
	}
	store := model.NewFakeStore()
	env := model.Environment{
		Watcher:     meshwatcher.NewTestWatcher(meshConfig),
		ConfigStore: store,
	}
	env.SetPushContext(&model.PushContext{ProxyConfigs: model.GetProxyConfigs(store, meshConfig)})
	watcher, err := inject.NewFileWatcher(s.config, s.values)
	if err != nil {
		return nil, fmt.Errorf("watching %s and %s: %v", s.config, s.values, err)
	}
	mux := http.NewServeMux()
	wh, err := inject.NewWebhook(inject.WebhookParameters{
		Watcher:      watcher,
		Env:          &env,
		Mux:          mux,
		Revision:     "default",
		MultiCluster: multicluster.NewFakeController(),
	})
	if err != nil {
		return nil, fmt.Errorf("inject.NewWebhook: %v", err)
	}
	wh.Run(stop)
	return mux, nil
}
