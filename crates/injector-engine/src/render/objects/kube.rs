//! Kubernetes types the templates walk (`k8s.io/api/core/v1`, `metav1`, `types`), as schemas
//! for [`GoStruct`]: Go field names and order, `json` tags and
//! `omitempty`. Types the templates only pass through (env vars, volumes) are opaque; all of
//! them are marshalled exactly through the generated table ([`k8sjson`](super::k8sjson)).

use std::sync::Arc;

use gotemplate::Value;
use serde_json::Value as Json;

use super::gostruct::Kind::{
    Bool, Embedded, Inline, Int, Int32, Int64, IntOrString, List, Opaque, Ptr, PtrBool, PtrInt32, PtrInt64,
    PtrStr, Str, StrList, StrMap, Struct, Time,
};
use super::gostruct::{GoStruct, JsonRef, Schema, always, f};

/// `v1.ContainerPort`.
pub static CONTAINER_PORT: Schema = Schema::kube(
    "v1.ContainerPort",
    "*v1.ContainerPort",
    &[
        f("Name", "name", Str),
        f("HostPort", "hostPort", Int32),
        always("ContainerPort", "containerPort", Int32),
        f("Protocol", "protocol", Str),
        f("HostIP", "hostIP", Str),
    ],
);

/// `v1.Container`.
pub static CONTAINER: Schema = Schema::kube(
    "v1.Container",
    "*v1.Container",
    &[
        always("Name", "name", Str),
        f("Image", "image", Str),
        f("Command", "command", StrList),
        f("Args", "args", StrList),
        f("WorkingDir", "workingDir", Str),
        f("Ports", "ports", List(&CONTAINER_PORT)),
        f("EnvFrom", "envFrom", Opaque("[]v1.EnvFromSource")),
        f("Env", "env", Opaque("[]v1.EnvVar")),
        f("Resources", "resources", Opaque("v1.ResourceRequirements")),
        f(
            "ResizePolicy",
            "resizePolicy",
            Opaque("[]v1.ContainerResizePolicy"),
        ),
        f("RestartPolicy", "restartPolicy", PtrStr),
        f(
            "RestartPolicyRules",
            "restartPolicyRules",
            Opaque("[]v1.ContainerRestartRule"),
        ),
        f("VolumeMounts", "volumeMounts", Opaque("[]v1.VolumeMount")),
        f("VolumeDevices", "volumeDevices", Opaque("[]v1.VolumeDevice")),
        f("LivenessProbe", "livenessProbe", Ptr(&PROBE)),
        f("ReadinessProbe", "readinessProbe", Ptr(&PROBE)),
        f("StartupProbe", "startupProbe", Ptr(&PROBE)),
        f("Lifecycle", "lifecycle", Opaque("*v1.Lifecycle")),
        f("TerminationMessagePath", "terminationMessagePath", Str),
        f("TerminationMessagePolicy", "terminationMessagePolicy", Str),
        f("ImagePullPolicy", "imagePullPolicy", Str),
        f(
            "SecurityContext",
            "securityContext",
            Opaque("*v1.SecurityContext"),
        ),
        f("Stdin", "stdin", Bool),
        f("StdinOnce", "stdinOnce", Bool),
        f("TTY", "tty", Bool),
    ],
);

/// `v1.PodSpec`.
pub static POD_SPEC: Schema = Schema::kube(
    "v1.PodSpec",
    "*v1.PodSpec",
    &[
        f("Volumes", "volumes", Opaque("[]v1.Volume")),
        f("InitContainers", "initContainers", List(&CONTAINER)),
        always("Containers", "containers", List(&CONTAINER)),
        f(
            "EphemeralContainers",
            "ephemeralContainers",
            Opaque("[]v1.EphemeralContainer"),
        ),
        f("RestartPolicy", "restartPolicy", Str),
        f(
            "TerminationGracePeriodSeconds",
            "terminationGracePeriodSeconds",
            PtrInt64,
        ),
        f("ActiveDeadlineSeconds", "activeDeadlineSeconds", PtrInt64),
        f("DNSPolicy", "dnsPolicy", Str),
        f("NodeSelector", "nodeSelector", StrMap),
        f("ServiceAccountName", "serviceAccountName", Str),
        f("DeprecatedServiceAccount", "serviceAccount", Str),
        f(
            "AutomountServiceAccountToken",
            "automountServiceAccountToken",
            PtrBool,
        ),
        f("NodeName", "nodeName", Str),
        f("HostNetwork", "hostNetwork", Bool),
        f("HostPID", "hostPID", Bool),
        f("HostIPC", "hostIPC", Bool),
        f("ShareProcessNamespace", "shareProcessNamespace", PtrBool),
        f(
            "SecurityContext",
            "securityContext",
            Opaque("*v1.PodSecurityContext"),
        ),
        f(
            "ImagePullSecrets",
            "imagePullSecrets",
            Opaque("[]v1.LocalObjectReference"),
        ),
        f("Hostname", "hostname", Str),
        f("Subdomain", "subdomain", Str),
        f("Affinity", "affinity", Opaque("*v1.Affinity")),
        f("SchedulerName", "schedulerName", Str),
        f("Tolerations", "tolerations", Opaque("[]v1.Toleration")),
        f("HostAliases", "hostAliases", Opaque("[]v1.HostAlias")),
        f("PriorityClassName", "priorityClassName", Str),
        f("Priority", "priority", PtrInt32),
        f("DNSConfig", "dnsConfig", Opaque("*v1.PodDNSConfig")),
        f(
            "ReadinessGates",
            "readinessGates",
            Opaque("[]v1.PodReadinessGate"),
        ),
        f("RuntimeClassName", "runtimeClassName", PtrStr),
        f("EnableServiceLinks", "enableServiceLinks", PtrBool),
        f("PreemptionPolicy", "preemptionPolicy", PtrStr),
        f(
            "Overhead",
            "overhead",
            Opaque("map[v1.ResourceName]resource.Quantity"),
        ),
        f(
            "TopologySpreadConstraints",
            "topologySpreadConstraints",
            Opaque("[]v1.TopologySpreadConstraint"),
        ),
        f("SetHostnameAsFQDN", "setHostnameAsFQDN", PtrBool),
        f("OS", "os", Opaque("*v1.PodOS")),
        f("HostUsers", "hostUsers", PtrBool),
        f(
            "SchedulingGates",
            "schedulingGates",
            Opaque("[]v1.PodSchedulingGate"),
        ),
        f(
            "ResourceClaims",
            "resourceClaims",
            Opaque("[]v1.PodResourceClaim"),
        ),
        f("Resources", "resources", Opaque("*v1.ResourceRequirements")),
        f("HostnameOverride", "hostnameOverride", PtrStr),
    ],
);

/// `metav1.ObjectMeta` (with its `GetX` accessors).
pub static OBJECT_META: Schema = Schema::kube(
    "v1.ObjectMeta",
    "*v1.ObjectMeta",
    &[
        f("Name", "name", Str),
        f("GenerateName", "generateName", Str),
        f("Namespace", "namespace", Str),
        f("SelfLink", "selfLink", Str),
        f("UID", "uid", Str),
        f("ResourceVersion", "resourceVersion", Str),
        f("Generation", "generation", Int64),
        f("CreationTimestamp", "creationTimestamp", Time),
        f("DeletionTimestamp", "deletionTimestamp", Opaque("*v1.Time")),
        f(
            "DeletionGracePeriodSeconds",
            "deletionGracePeriodSeconds",
            PtrInt64,
        ),
        f("Labels", "labels", StrMap),
        f("Annotations", "annotations", StrMap),
        f("OwnerReferences", "ownerReferences", List(&OWNER_REFERENCE)),
        f("Finalizers", "finalizers", StrList),
        f(
            "ManagedFields",
            "managedFields",
            Opaque("[]v1.ManagedFieldsEntry"),
        ),
    ],
)
.with_getters();

/// `metav1.TypeMeta` (with `GroupVersionKind` and `GetObjectKind`).
pub static TYPE_META: Schema = Schema::kube(
    "v1.TypeMeta",
    "*v1.TypeMeta",
    &[f("Kind", "kind", Str), f("APIVersion", "apiVersion", Str)],
)
.with_methods(&[
    ("GroupVersionKind", group_version_kind),
    ("GetObjectKind", get_object_kind),
]);

fn group_version_kind(t: &GoStruct) -> Value {
    let json = t.json();
    let get = |k: &str| json.get(k).and_then(Json::as_str).unwrap_or("");
    let (group, version) = match get("apiVersion").split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", get("apiVersion")),
    };
    let gvk = serde_json::json!({"Group": group, "Version": version, "Kind": get("kind")});
    Value::object(GoStruct::value(
        &GROUP_VERSION_KIND,
        Some(JsonRef::root(Arc::new(gvk))),
    ))
}

fn get_object_kind(t: &GoStruct) -> Value {
    Value::object(GoStruct::pointer(&TYPE_META, t.node().cloned()))
}

/// `schema.GroupVersionKind`.
pub static GROUP_VERSION_KIND: Schema = Schema::kube(
    "schema.GroupVersionKind",
    "*schema.GroupVersionKind",
    &[
        always("Group", "Group", Str),
        always("Version", "Version", Str),
        always("Kind", "Kind", Str),
    ],
)
.with_stringer(gvk_string);

fn gvk_string(json: &Json) -> String {
    let get = |k: &str| json.get(k).and_then(Json::as_str).unwrap_or("");
    let gv = if get("Group").is_empty() {
        get("Version").to_string()
    } else {
        format!("{}/{}", get("Group"), get("Version"))
    };
    format!("{gv}, Kind={}", get("Kind"))
}

/// `metav1.OwnerReference`.
pub static OWNER_REFERENCE: Schema = Schema::kube(
    "v1.OwnerReference",
    "*v1.OwnerReference",
    &[
        always("APIVersion", "apiVersion", Str),
        always("Kind", "kind", Str),
        always("Name", "name", Str),
        always("UID", "uid", Str),
        f("Controller", "controller", PtrBool),
        f("BlockOwnerDeletion", "blockOwnerDeletion", PtrBool),
    ],
);

/// `v1.Probe` (the handler is embedded: `.HTTPGet` is promoted).
pub static PROBE: Schema = Schema::kube(
    "v1.Probe",
    "*v1.Probe",
    &[
        always("ProbeHandler", "", Inline(&PROBE_HANDLER)),
        f("InitialDelaySeconds", "initialDelaySeconds", Int32),
        f("TimeoutSeconds", "timeoutSeconds", Int32),
        f("PeriodSeconds", "periodSeconds", Int32),
        f("SuccessThreshold", "successThreshold", Int32),
        f("FailureThreshold", "failureThreshold", Int32),
        f(
            "TerminationGracePeriodSeconds",
            "terminationGracePeriodSeconds",
            PtrInt64,
        ),
    ],
);

/// `v1.ProbeHandler`.
pub static PROBE_HANDLER: Schema = Schema::kube(
    "v1.ProbeHandler",
    "*v1.ProbeHandler",
    &[
        f("Exec", "exec", Opaque("*v1.ExecAction")),
        f("HTTPGet", "httpGet", Ptr(&HTTP_GET_ACTION)),
        f("TCPSocket", "tcpSocket", Opaque("*v1.TCPSocketAction")),
        f("GRPC", "grpc", Opaque("*v1.GRPCAction")),
    ],
);

/// `v1.HTTPGetAction`.
pub static HTTP_GET_ACTION: Schema = Schema::kube(
    "v1.HTTPGetAction",
    "*v1.HTTPGetAction",
    &[
        f("Path", "path", Str),
        always("Port", "port", IntOrString),
        f("Host", "host", Str),
        f("Scheme", "scheme", Str),
        f("HTTPHeaders", "httpHeaders", Opaque("[]v1.HTTPHeader")),
    ],
);

/// Gateway API `v1.GatewayInfrastructure`.
pub static GATEWAY_INFRASTRUCTURE: Schema = Schema::kube(
    "v1.GatewayInfrastructure",
    "*v1.GatewayInfrastructure",
    &[
        f("Labels", "labels", StrMap),
        f("Annotations", "annotations", StrMap),
        f(
            "ParametersRef",
            "parametersRef",
            Opaque("*v1.LocalParametersReference"),
        ),
    ],
);

/// `types.NamespacedName` (no `json` tags; `String()` is `namespace/name`).
pub static NAMESPACED_NAME: Schema = Schema::kube(
    "types.NamespacedName",
    "*types.NamespacedName",
    &[always("Namespace", "Namespace", Str), always("Name", "Name", Str)],
)
.with_stringer(namespaced_name_string);

fn namespaced_name_string(json: &Json) -> String {
    let get = |k: &str| json.get(k).and_then(Json::as_str).unwrap_or("");
    format!("{}/{}", get("Namespace"), get("Name"))
}

/// `v1.ServicePort` (gateway template input).
pub static SERVICE_PORT: Schema = Schema::kube(
    "v1.ServicePort",
    "*v1.ServicePort",
    &[
        f("Name", "name", Str),
        f("Protocol", "protocol", Str),
        f("AppProtocol", "appProtocol", PtrStr),
        always("Port", "port", Int32),
        f("TargetPort", "targetPort", Opaque("intstr.IntOrString")),
        f("NodePort", "nodePort", Int32),
    ],
);

/// Gateway API `v1.Listener`.
pub static LISTENER: Schema = Schema::kube(
    "v1.Listener",
    "*v1.Listener",
    &[
        always("Name", "name", Str),
        f("Hostname", "hostname", PtrStr),
        always("Port", "port", Int32),
        always("Protocol", "protocol", Str),
        f("TLS", "tls", Opaque("*v1.ListenerTLSConfig")),
        f("AllowedRoutes", "allowedRoutes", Opaque("*v1.AllowedRoutes")),
    ],
);

/// Gateway API `v1.GatewaySpec`.
pub static GATEWAY_SPEC: Schema = Schema::kube(
    "v1.GatewaySpec",
    "*v1.GatewaySpec",
    &[
        always("GatewayClassName", "gatewayClassName", Str),
        always("Listeners", "listeners", List(&LISTENER)),
        f("Addresses", "addresses", Opaque("[]v1.GatewaySpecAddress")),
        f("Infrastructure", "infrastructure", Ptr(&GATEWAY_INFRASTRUCTURE)),
        f(
            "AllowedListeners",
            "allowedListeners",
            Opaque("*v1.AllowedListeners"),
        ),
        f("TLS", "tls", Opaque("*v1.GatewayTLSConfig")),
        f("DefaultScope", "defaultScope", Str),
    ],
);

/// Gateway API `v1.Gateway`.
pub static GATEWAY: Schema = Schema::kube(
    "v1.Gateway",
    "*v1.Gateway",
    &[
        always("TypeMeta", "", Inline(&TYPE_META)),
        f("ObjectMeta", "metadata", Embedded(&OBJECT_META)),
        always("Spec", "spec", Struct(&GATEWAY_SPEC)),
        f("Status", "status", Opaque("v1.GatewayStatus")),
    ],
);

/// The gateway deployment controller's `TemplateInput` minus the embedded Gateway, backed by
/// JSON whose keys are the Go field names.
pub static GATEWAY_INPUT: Schema = Schema::kube(
    "gatewaycommon.TemplateInput",
    "*gatewaycommon.TemplateInput",
    &[
        always("GatewayClass", "GatewayClass", Str),
        always("DeploymentName", "DeploymentName", Str),
        always("ServiceAccount", "ServiceAccount", Str),
        always("Ports", "Ports", List(&SERVICE_PORT)),
        always("ServiceType", "ServiceType", Str),
        always("ClusterID", "ClusterID", Str),
        always("KubeVersion", "KubeVersion", Int),
        always("Revision", "Revision", Str),
        always("NativeSidecars", "NativeSidecars", Bool),
        always("ProxyUID", "ProxyUID", Int64),
        always("ProxyGID", "ProxyGID", Int64),
        always("CompliancePolicy", "CompliancePolicy", Str),
        always("InfrastructureLabels", "InfrastructureLabels", StrMap),
        always("InfrastructureAnnotations", "InfrastructureAnnotations", StrMap),
        always("GatewayNameLabel", "GatewayNameLabel", Str),
        always("IsEastWestGateway", "IsEastWestGateway", Bool),
        always("ControllerLabel", "ControllerLabel", Str),
    ],
);
