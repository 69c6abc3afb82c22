//! Istio's mesh API types (`istio.io/api/mesh/v1alpha1`) as schemas for
//! `GoStruct` (the `gostruct` module), backed by their protobuf JSON: `*v1alpha1.ProxyConfig`,
//! `*v1alpha1.MeshConfig` and what the templates reach through them (`Tracing`,
//! `ClientTLSSettings`). Every message has protobuf's nil-safe `GetX` getters; fields that are
//! `oneof`s in Go (`ClusterName`, `Tracer`, `Provider`) are reachable only through their getters,
//! as in Go. Nested messages the templates do not walk are opaque. The field lists follow the
//! Go structs of `istio.io/api` at the pinned version (v1.31 pre-release, 2026-08-24).

use super::gostruct::Kind::{
    Bool, Enum, Float64, Int32, Opaque, Ptr, PtrList, Str, StrList, StrMap, Uint32, Wrapper,
};
use std::sync::Arc;

use gotemplate::Value;
use serde_json::Value as Json;

use super::gostruct::{GoStruct, JsonRef, Schema, f};
use super::proto::{EnumType, WrapperKind};

const DURATION: super::gostruct::Kind = Wrapper(WrapperKind::Duration);
const BOOL_VALUE: super::gostruct::Kind = Wrapper(WrapperKind::Bool);

/// `ProxyConfig_InboundInterceptionMode`.
pub static INTERCEPTION_MODE: EnumType = EnumType {
    go_type: "v1alpha1.ProxyConfig_InboundInterceptionMode",
    values: &[("REDIRECT", 0), ("TPROXY", 1), ("NONE", 2)],
};

static AUTH_POLICY: EnumType = EnumType {
    go_type: "v1alpha1.AuthenticationPolicy",
    values: &[("NONE", 0), ("MUTUAL_TLS", 1), ("INHERIT", 1000)],
};

static TRACING_SERVICE_NAME: EnumType = EnumType {
    go_type: "v1alpha1.ProxyConfig_TracingServiceName",
    values: &[
        ("APP_LABEL_AND_NAMESPACE", 0),
        ("CANONICAL_NAME_ONLY", 1),
        ("CANONICAL_NAME_AND_NAMESPACE", 2),
    ],
};

static TLS_MODE: EnumType = EnumType {
    go_type: "v1alpha3.ClientTLSSettings_TLSmode",
    values: &[("DISABLE", 0), ("SIMPLE", 1), ("MUTUAL", 2), ("ISTIO_MUTUAL", 3)],
};

static INGRESS_CONTROLLER_MODE: EnumType = EnumType {
    go_type: "v1alpha1.MeshConfig_IngressControllerMode",
    values: &[("UNSPECIFIED", 0), ("OFF", 1), ("DEFAULT", 2), ("STRICT", 3)],
};

static ACCESS_LOG_ENCODING: EnumType = EnumType {
    go_type: "v1alpha1.MeshConfig_AccessLogEncoding",
    values: &[("TEXT", 0), ("JSON", 1)],
};

static INBOUND_MODE: EnumType = EnumType {
    go_type: "v1alpha1.MeshConfig_InboundTrafficPolicy_Mode",
    values: &[("PASSTHROUGH", 0), ("LOCALHOST", 1)],
};

static OUTBOUND_MODE: EnumType = EnumType {
    go_type: "v1alpha1.MeshConfig_OutboundTrafficPolicy_Mode",
    values: &[("REGISTRY_ONLY", 0), ("ALLOW_ANY", 1)],
};

/// `v1alpha1.MeshConfig_InboundTrafficPolicy`.
pub static INBOUND_TRAFFIC_POLICY: Schema = Schema::proto(
    "v1alpha1.MeshConfig_InboundTrafficPolicy",
    "*v1alpha1.MeshConfig_InboundTrafficPolicy",
    &[f("Mode", "mode", Enum(&INBOUND_MODE))],
    &[],
);

/// `v1alpha1.MeshConfig_OutboundTrafficPolicy`.
pub static OUTBOUND_TRAFFIC_POLICY: Schema = Schema::proto(
    "v1alpha1.MeshConfig_OutboundTrafficPolicy",
    "*v1alpha1.MeshConfig_OutboundTrafficPolicy",
    &[f("Mode", "mode", Enum(&OUTBOUND_MODE))],
    &[],
);

static H2_UPGRADE_POLICY: EnumType = EnumType {
    go_type: "v1alpha1.MeshConfig_H2UpgradePolicy",
    values: &[("DO_NOT_UPGRADE", 0), ("UPGRADE", 1)],
};

/// `v1alpha1.MeshConfig_ExtensionProvider`.
pub static EXTENSION_PROVIDER: Schema = Schema::proto(
    "v1alpha1.MeshConfig_ExtensionProvider",
    "*v1alpha1.MeshConfig_ExtensionProvider",
    &[
        f("Name", "name", Str),
        f(
            "Provider",
            "provider",
            Opaque("v1alpha1.isMeshConfig_ExtensionProvider_Provider"),
        ),
    ],
    &[
        f(
            "EnvoyExtAuthzHttp",
            "envoyExtAuthzHttp",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationHttpProvider"),
        ),
        f(
            "EnvoyExtAuthzGrpc",
            "envoyExtAuthzGrpc",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyExternalAuthorizationGrpcProvider"),
        ),
        f(
            "Zipkin",
            "zipkin",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_ZipkinTracingProvider"),
        ),
        f(
            "Lightstep",
            "lightstep",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_LightstepTracingProvider"),
        ),
        f(
            "Datadog",
            "datadog",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_DatadogTracingProvider"),
        ),
        f(
            "Stackdriver",
            "stackdriver",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_StackdriverProvider"),
        ),
        f(
            "Opencensus",
            "opencensus",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_OpenCensusAgentTracingProvider"),
        ),
        f(
            "Skywalking",
            "skywalking",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_SkyWalkingTracingProvider"),
        ),
        f(
            "Opentelemetry",
            "opentelemetry",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_OpenTelemetryTracingProvider"),
        ),
        f(
            "Prometheus",
            "prometheus",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_PrometheusMetricsProvider"),
        ),
        f(
            "EnvoyFileAccessLog",
            "envoyFileAccessLog",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider"),
        ),
        f(
            "EnvoyHttpAls",
            "envoyHttpAls",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyHttpGrpcV3LogProvider"),
        ),
        f(
            "EnvoyTcpAls",
            "envoyTcpAls",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyTcpGrpcV3LogProvider"),
        ),
        f(
            "EnvoyOtelAls",
            "envoyOtelAls",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_EnvoyOpenTelemetryLogProvider"),
        ),
        f(
            "Sds",
            "sds",
            Opaque("*v1alpha1.MeshConfig_ExtensionProvider_SDSProvider"),
        ),
    ],
);

const TRACING_ONEOFS: &[super::gostruct::Field] = &[
    f("Zipkin", "zipkin", Opaque("*v1alpha1.Tracing_Zipkin")),
    f("Lightstep", "lightstep", Opaque("*v1alpha1.Tracing_Lightstep")),
    f("Datadog", "datadog", Opaque("*v1alpha1.Tracing_Datadog")),
    f(
        "Stackdriver",
        "stackdriver",
        Opaque("*v1alpha1.Tracing_Stackdriver"),
    ),
    f(
        "OpenCensusAgent",
        "openCensusAgent",
        Opaque("*v1alpha1.Tracing_OpenCensusAgent"),
    ),
];

const PROXY_CONFIG_ONEOFS: &[super::gostruct::Field] = &[
    f("ServiceCluster", "serviceCluster", Str),
    f(
        "TracingServiceName",
        "tracingServiceName",
        Enum(&TRACING_SERVICE_NAME),
    ),
];

/// `v1alpha3.ClientTLSSettings`.
pub static CLIENT_TLS_SETTINGS: Schema = Schema::proto(
    "v1alpha3.ClientTLSSettings",
    "*v1alpha3.ClientTLSSettings",
    &[
        f("Mode", "mode", Enum(&TLS_MODE)),
        f("ClientCertificate", "clientCertificate", Str),
        f("PrivateKey", "privateKey", Str),
        f("CaCertificates", "caCertificates", Str),
        f("CredentialName", "credentialName", Str),
        f("SubjectAltNames", "subjectAltNames", StrList),
        f("Sni", "sni", Str),
        f("InsecureSkipVerify", "insecureSkipVerify", BOOL_VALUE),
        f("CaCrl", "caCrl", Str),
    ],
    &[],
);

/// `v1alpha1.Tracing`.
pub static TRACING: Schema = Schema::proto(
    "v1alpha1.Tracing",
    "*v1alpha1.Tracing",
    &[
        f("Tracer", "tracer", Opaque("v1alpha1.isTracing_Tracer")),
        f(
            "CustomTags",
            "customTags",
            Opaque("map[string]*v1alpha1.Tracing_CustomTag"),
        ),
        f("MaxPathTagLength", "maxPathTagLength", Uint32),
        f("Sampling", "sampling", Float64),
        f("TlsSettings", "tlsSettings", Ptr(&CLIENT_TLS_SETTINGS)),
        f("EnableIstioTags", "enableIstioTags", BOOL_VALUE),
    ],
    TRACING_ONEOFS,
);

/// `v1alpha1.ProxyConfig`.
pub static PROXY_CONFIG: Schema = Schema::proto(
    "v1alpha1.ProxyConfig",
    "*v1alpha1.ProxyConfig",
    &[
        f("ConfigPath", "configPath", Str),
        f("BinaryPath", "binaryPath", Str),
        f(
            "ClusterName",
            "clusterName",
            Opaque("v1alpha1.isProxyConfig_ClusterName"),
        ),
        f("DrainDuration", "drainDuration", DURATION),
        f("DiscoveryAddress", "discoveryAddress", Str),
        f("DiscoveryRefreshDelay", "discoveryRefreshDelay", DURATION),
        f("ZipkinAddress", "zipkinAddress", Str),
        f("StatsdUdpAddress", "statsdUdpAddress", Str),
        f("EnvoyMetricsServiceAddress", "envoyMetricsServiceAddress", Str),
        f("ProxyAdminPort", "proxyAdminPort", Int32),
        f("AvailabilityZone", "availabilityZone", Str),
        f(
            "ControlPlaneAuthPolicy",
            "controlPlaneAuthPolicy",
            Enum(&AUTH_POLICY),
        ),
        f("CustomConfigFile", "customConfigFile", Str),
        f("StatNameLength", "statNameLength", Int32),
        f("Concurrency", "concurrency", Wrapper(WrapperKind::Int32)),
        f("ProxyBootstrapTemplatePath", "proxyBootstrapTemplatePath", Str),
        f("InterceptionMode", "interceptionMode", Enum(&INTERCEPTION_MODE)),
        f("Tracing", "tracing", Ptr(&TRACING)),
        f("Sds", "sds", Opaque("*v1alpha1.SDS")),
        f(
            "EnvoyAccessLogService",
            "envoyAccessLogService",
            Opaque("*v1alpha1.RemoteService"),
        ),
        f(
            "EnvoyMetricsService",
            "envoyMetricsService",
            Opaque("*v1alpha1.RemoteService"),
        ),
        f("ProxyMetadata", "proxyMetadata", StrMap),
        f("RuntimeValues", "runtimeValues", StrMap),
        f("StatusPort", "statusPort", Int32),
        f("ExtraStatTags", "extraStatTags", StrList),
        f("GatewayTopology", "gatewayTopology", Opaque("*v1alpha1.Topology")),
        f("TerminationDrainDuration", "terminationDrainDuration", DURATION),
        f("MeshId", "meshId", Str),
        f(
            "ReadinessProbe",
            "readinessProbe",
            Opaque("*v1alpha3.ReadinessProbe"),
        ),
        f(
            "ProxyStatsMatcher",
            "proxyStatsMatcher",
            Opaque("*v1alpha1.ProxyConfig_ProxyStatsMatcher"),
        ),
        f(
            "HoldApplicationUntilProxyStarts",
            "holdApplicationUntilProxyStarts",
            BOOL_VALUE,
        ),
        f("CaCertificatesPem", "caCertificatesPem", StrList),
        f("Image", "image", Opaque("*v1beta1.ProxyImage")),
        f(
            "PrivateKeyProvider",
            "privateKeyProvider",
            Opaque("*v1alpha1.PrivateKeyProvider"),
        ),
        f(
            "ProxyHeaders",
            "proxyHeaders",
            Opaque("*v1alpha1.ProxyConfig_ProxyHeaders"),
        ),
        f("FileFlushInterval", "fileFlushInterval", DURATION),
        f("FileFlushMinSizeKb", "fileFlushMinSizeKb", Uint32),
        f("StatsCompression", "statsCompression", BOOL_VALUE),
        f(
            "ConnectionSettings",
            "connectionSettings",
            Opaque("*v1alpha1.ProxyConfig_ConnectionSettings"),
        ),
    ],
    PROXY_CONFIG_ONEOFS,
);

/// `v1alpha1.MeshConfig`.
pub static MESH_CONFIG: Schema = Schema::proto(
    "v1alpha1.MeshConfig",
    "*v1alpha1.MeshConfig",
    &[
        f("ProxyListenPort", "proxyListenPort", Int32),
        f("ProxyInboundListenPort", "proxyInboundListenPort", Int32),
        f("ProxyHttpPort", "proxyHttpPort", Int32),
        f("ConnectTimeout", "connectTimeout", DURATION),
        f("HboneIdleTimeout", "hboneIdleTimeout", DURATION),
        f("ProtocolDetectionTimeout", "protocolDetectionTimeout", DURATION),
        f(
            "TcpKeepalive",
            "tcpKeepalive",
            Opaque("*v1alpha3.ConnectionPoolSettings_TCPSettings_TcpKeepalive"),
        ),
        f("IngressClass", "ingressClass", Str),
        f("IngressService", "ingressService", Str),
        f(
            "IngressControllerMode",
            "ingressControllerMode",
            Enum(&INGRESS_CONTROLLER_MODE),
        ),
        f("IngressSelector", "ingressSelector", Str),
        f("EnableTracing", "enableTracing", Bool),
        f("AccessLogFile", "accessLogFile", Str),
        f("AccessLogFormat", "accessLogFormat", Str),
        f(
            "AccessLogEncoding",
            "accessLogEncoding",
            Enum(&ACCESS_LOG_ENCODING),
        ),
        f("EnableEnvoyAccessLogService", "enableEnvoyAccessLogService", Bool),
        f("DisableEnvoyListenerLog", "disableEnvoyListenerLog", Bool),
        f("DefaultConfig", "defaultConfig", Ptr(&PROXY_CONFIG)),
        f(
            "OutboundTrafficPolicy",
            "outboundTrafficPolicy",
            Ptr(&OUTBOUND_TRAFFIC_POLICY),
        ),
        f(
            "InboundTrafficPolicy",
            "inboundTrafficPolicy",
            Ptr(&INBOUND_TRAFFIC_POLICY),
        ),
        f(
            "ConfigSources",
            "configSources",
            Opaque("[]*v1alpha1.ConfigSource"),
        ),
        f("EnableAutoMtls", "enableAutoMtls", BOOL_VALUE),
        f("TrustDomain", "trustDomain", Str),
        f("TrustDomainAliases", "trustDomainAliases", StrList),
        f(
            "CaCertificates",
            "caCertificates",
            Opaque("[]*v1alpha1.MeshConfig_CertificateData"),
        ),
        f("DefaultServiceExportTo", "defaultServiceExportTo", StrList),
        f(
            "DefaultVirtualServiceExportTo",
            "defaultVirtualServiceExportTo",
            StrList,
        ),
        f(
            "DefaultDestinationRuleExportTo",
            "defaultDestinationRuleExportTo",
            StrList,
        ),
        f("RootNamespace", "rootNamespace", Str),
        f(
            "LocalityLbSetting",
            "localityLbSetting",
            Opaque("*v1alpha3.LocalityLoadBalancerSetting"),
        ),
        f(
            "ZoneAwareLbSetting",
            "zoneAwareLbSetting",
            Opaque("*v1alpha3.ZoneAwareLoadBalancerSetting"),
        ),
        f("DnsRefreshRate", "dnsRefreshRate", DURATION),
        f("H2UpgradePolicy", "h2UpgradePolicy", Enum(&H2_UPGRADE_POLICY)),
        f("InboundClusterStatName", "inboundClusterStatName", Str),
        f("OutboundClusterStatName", "outboundClusterStatName", Str),
        f("Certificates", "certificates", Opaque("[]*v1alpha1.Certificate")),
        f(
            "ServiceSettings",
            "serviceSettings",
            Opaque("[]*v1alpha1.MeshConfig_ServiceSettings"),
        ),
        f(
            "ServiceScopeConfigs",
            "serviceScopeConfigs",
            Opaque("[]*v1alpha1.MeshConfig_ServiceScopeConfigs"),
        ),
        f("EnablePrometheusMerge", "enablePrometheusMerge", BOOL_VALUE),
        f(
            "VerifyCertificateAtClient",
            "verifyCertificateAtClient",
            BOOL_VALUE,
        ),
        f("Ca", "ca", Opaque("*v1alpha1.MeshConfig_CA")),
        f(
            "ExtensionProviders",
            "extensionProviders",
            PtrList(&EXTENSION_PROVIDER),
        ),
        f(
            "DefaultProviders",
            "defaultProviders",
            Opaque("*v1alpha1.MeshConfig_DefaultProviders"),
        ),
        f(
            "DiscoverySelectors",
            "discoverySelectors",
            Opaque("[]*v1alpha1.LabelSelector"),
        ),
        f(
            "PathNormalization",
            "pathNormalization",
            Opaque("*v1alpha1.MeshConfig_ProxyPathNormalization"),
        ),
        f(
            "DefaultHttpRetryPolicy",
            "defaultHttpRetryPolicy",
            Opaque("*v1alpha3.HTTPRetry"),
        ),
        f("MeshMTLS", "meshMTLS", Opaque("*v1alpha1.MeshConfig_TLSConfig")),
        f(
            "TlsDefaults",
            "tlsDefaults",
            Opaque("*v1alpha1.MeshConfig_TLSConfig"),
        ),
        f(
            "DefaultTrafficPolicy",
            "defaultTrafficPolicy",
            Opaque("*v1alpha1.MeshConfig_DefaultTrafficPolicy"),
        ),
        f(
            "ServiceEntryVisibility",
            "serviceEntryVisibility",
            Opaque("*v1alpha1.ServiceEntryVisibility"),
        ),
    ],
    &[],
);

/// `.ProxyConfig` of the templates: a `*meshconfig.ProxyConfig` over protobuf JSON.
pub fn proxy_config_value(proxy_config: &Arc<Json>) -> Value {
    Value::object(GoStruct::pointer(
        &PROXY_CONFIG,
        Some(JsonRef::root(proxy_config.clone())),
    ))
}

/// `.MeshConfig` of the templates: a `*meshconfig.MeshConfig` over protobuf JSON.
pub fn mesh_config_value(mesh: &Arc<Json>) -> Value {
    Value::object(GoStruct::pointer(&MESH_CONFIG, Some(JsonRef::root(mesh.clone()))))
}
