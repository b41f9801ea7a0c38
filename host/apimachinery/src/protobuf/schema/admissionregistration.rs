//! `k8s.io/api/admissionregistration/v1` (admissionregistration.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::{Emit::*, Kind, Message, field};

/// `MutatingWebhookConfiguration`.
pub(crate) static MUTATING_WEBHOOK_CONFIGURATION: Message = Message::new(
    "MutatingWebhookConfiguration",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(2, "webhooks", Kind::Messages(&MUTATING_WEBHOOK), OmitEmpty),
    ],
);

/// `MutatingWebhook`.
pub(crate) static MUTATING_WEBHOOK: Message = Message::new(
    "MutatingWebhook",
    &[
        field(1, "name", Kind::String, Always),
        field(
            2,
            "clientConfig",
            Kind::Message(&WEBHOOK_CLIENT_CONFIG),
            Always,
        ),
        field(3, "rules", Kind::Messages(&RULE_WITH_OPERATIONS), OmitEmpty),
        field(4, "failurePolicy", Kind::String, IfSet),
        field(9, "matchPolicy", Kind::String, IfSet),
        field(
            5,
            "namespaceSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(
            11,
            "objectSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(6, "sideEffects", Kind::String, IfSet),
        field(7, "timeoutSeconds", Kind::Int32, IfSet),
        field(8, "admissionReviewVersions", Kind::Strings, Always),
        field(10, "reinvocationPolicy", Kind::String, IfSet),
        field(
            12,
            "matchConditions",
            Kind::Messages(&MATCH_CONDITION),
            OmitEmpty,
        ),
    ],
);

/// `WebhookClientConfig`.
pub(crate) static WEBHOOK_CLIENT_CONFIG: Message = Message::new(
    "WebhookClientConfig",
    &[
        field(3, "url", Kind::String, IfSet),
        field(1, "service", Kind::Message(&SERVICE_REFERENCE), IfSet),
        field(2, "caBundle", Kind::Bytes, OmitEmpty),
    ],
);

/// `ServiceReference`.
pub(crate) static SERVICE_REFERENCE: Message = Message::new(
    "ServiceReference",
    &[
        field(1, "namespace", Kind::String, Always),
        field(2, "name", Kind::String, Always),
        field(3, "path", Kind::String, IfSet),
        field(4, "port", Kind::Int32, IfSet),
    ],
);

/// `RuleWithOperations`.
pub(crate) static RULE_WITH_OPERATIONS: Message = Message::new(
    "RuleWithOperations",
    &[
        field(1, "operations", Kind::Strings, OmitEmpty),
        field(2, "rule", Kind::Inline(&RULE), Always),
    ],
);

/// `Rule`.
pub(crate) static RULE: Message = Message::new(
    "Rule",
    &[
        field(1, "apiGroups", Kind::Strings, OmitEmpty),
        field(2, "apiVersions", Kind::Strings, OmitEmpty),
        field(3, "resources", Kind::Strings, OmitEmpty),
        field(4, "scope", Kind::String, IfSet),
    ],
);

/// `MatchCondition`.
pub(crate) static MATCH_CONDITION: Message = Message::new(
    "MatchCondition",
    &[
        field(1, "name", Kind::String, Always),
        field(2, "expression", Kind::String, Always),
    ],
);

/// `ValidatingWebhookConfiguration`.
pub(crate) static VALIDATING_WEBHOOK_CONFIGURATION: Message = Message::new(
    "ValidatingWebhookConfiguration",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "webhooks",
            Kind::Messages(&VALIDATING_WEBHOOK),
            OmitEmpty,
        ),
    ],
);

/// `ValidatingWebhook`.
pub(crate) static VALIDATING_WEBHOOK: Message = Message::new(
    "ValidatingWebhook",
    &[
        field(1, "name", Kind::String, Always),
        field(
            2,
            "clientConfig",
            Kind::Message(&WEBHOOK_CLIENT_CONFIG),
            Always,
        ),
        field(3, "rules", Kind::Messages(&RULE_WITH_OPERATIONS), OmitEmpty),
        field(4, "failurePolicy", Kind::String, IfSet),
        field(9, "matchPolicy", Kind::String, IfSet),
        field(
            5,
            "namespaceSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(
            10,
            "objectSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(6, "sideEffects", Kind::String, IfSet),
        field(7, "timeoutSeconds", Kind::Int32, IfSet),
        field(8, "admissionReviewVersions", Kind::Strings, Always),
        field(
            11,
            "matchConditions",
            Kind::Messages(&MATCH_CONDITION),
            OmitEmpty,
        ),
    ],
);

/// `ValidatingAdmissionPolicy`.
pub(crate) static VALIDATING_ADMISSION_POLICY: Message = Message::new(
    "ValidatingAdmissionPolicy",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&VALIDATING_ADMISSION_POLICY_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&VALIDATING_ADMISSION_POLICY_STATUS),
            Always,
        ),
    ],
);

/// `ValidatingAdmissionPolicySpec`.
pub(crate) static VALIDATING_ADMISSION_POLICY_SPEC: Message = Message::new(
    "ValidatingAdmissionPolicySpec",
    &[
        field(1, "paramKind", Kind::Message(&PARAM_KIND), IfSet),
        field(
            2,
            "matchConstraints",
            Kind::Message(&MATCH_RESOURCES),
            IfSet,
        ),
        field(3, "validations", Kind::Messages(&VALIDATION), OmitEmpty),
        field(4, "failurePolicy", Kind::String, IfSet),
        field(
            5,
            "auditAnnotations",
            Kind::Messages(&AUDIT_ANNOTATION),
            OmitEmpty,
        ),
        field(
            6,
            "matchConditions",
            Kind::Messages(&MATCH_CONDITION),
            OmitEmpty,
        ),
        field(7, "variables", Kind::Messages(&VARIABLE), OmitEmpty),
    ],
);

/// `ParamKind`.
pub(crate) static PARAM_KIND: Message = Message::new(
    "ParamKind",
    &[
        field(1, "apiVersion", Kind::String, OmitEmpty),
        field(2, "kind", Kind::String, OmitEmpty),
    ],
);

/// `MatchResources`.
pub(crate) static MATCH_RESOURCES: Message = Message::new(
    "MatchResources",
    &[
        field(
            1,
            "namespaceSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(
            2,
            "objectSelector",
            Kind::Message(&meta::LABEL_SELECTOR),
            IfSet,
        ),
        field(
            3,
            "resourceRules",
            Kind::Messages(&NAMED_RULE_WITH_OPERATIONS),
            OmitEmpty,
        ),
        field(
            4,
            "excludeResourceRules",
            Kind::Messages(&NAMED_RULE_WITH_OPERATIONS),
            OmitEmpty,
        ),
        field(7, "matchPolicy", Kind::String, IfSet),
    ],
);

/// `NamedRuleWithOperations`.
pub(crate) static NAMED_RULE_WITH_OPERATIONS: Message = Message::new(
    "NamedRuleWithOperations",
    &[
        field(1, "resourceNames", Kind::Strings, OmitEmpty),
        field(
            2,
            "ruleWithOperations",
            Kind::Inline(&RULE_WITH_OPERATIONS),
            Always,
        ),
    ],
);

/// `Validation`.
pub(crate) static VALIDATION: Message = Message::new(
    "Validation",
    &[
        field(1, "expression", Kind::String, Always),
        field(2, "message", Kind::String, OmitEmpty),
        field(3, "reason", Kind::String, IfSet),
        field(4, "messageExpression", Kind::String, OmitEmpty),
    ],
);

/// `AuditAnnotation`.
pub(crate) static AUDIT_ANNOTATION: Message = Message::new(
    "AuditAnnotation",
    &[
        field(1, "key", Kind::String, Always),
        field(2, "valueExpression", Kind::String, Always),
    ],
);

/// `Variable`.
pub(crate) static VARIABLE: Message = Message::new(
    "Variable",
    &[
        field(1, "name", Kind::String, Always),
        field(2, "expression", Kind::String, Always),
    ],
);

/// `ValidatingAdmissionPolicyStatus`.
pub(crate) static VALIDATING_ADMISSION_POLICY_STATUS: Message = Message::new(
    "ValidatingAdmissionPolicyStatus",
    &[
        field(1, "observedGeneration", Kind::Int64, OmitEmpty),
        field(2, "typeChecking", Kind::Message(&TYPE_CHECKING), IfSet),
        field(3, "conditions", Kind::Messages(&meta::CONDITION), OmitEmpty),
    ],
);

/// `TypeChecking`.
pub(crate) static TYPE_CHECKING: Message = Message::new(
    "TypeChecking",
    &[field(
        1,
        "expressionWarnings",
        Kind::Messages(&EXPRESSION_WARNING),
        OmitEmpty,
    )],
);

/// `ExpressionWarning`.
pub(crate) static EXPRESSION_WARNING: Message = Message::new(
    "ExpressionWarning",
    &[
        field(2, "fieldRef", Kind::String, Always),
        field(3, "warning", Kind::String, Always),
    ],
);

/// `ValidatingAdmissionPolicyBinding`.
pub(crate) static VALIDATING_ADMISSION_POLICY_BINDING: Message = Message::new(
    "ValidatingAdmissionPolicyBinding",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&VALIDATING_ADMISSION_POLICY_BINDING_SPEC),
            Always,
        ),
    ],
);

/// `ValidatingAdmissionPolicyBindingSpec`.
pub(crate) static VALIDATING_ADMISSION_POLICY_BINDING_SPEC: Message = Message::new(
    "ValidatingAdmissionPolicyBindingSpec",
    &[
        field(1, "policyName", Kind::String, OmitEmpty),
        field(2, "paramRef", Kind::Message(&PARAM_REF), IfSet),
        field(3, "matchResources", Kind::Message(&MATCH_RESOURCES), IfSet),
        field(4, "validationActions", Kind::Strings, OmitEmpty),
    ],
);

/// `ParamRef`.
pub(crate) static PARAM_REF: Message = Message::new(
    "ParamRef",
    &[
        field(1, "name", Kind::String, OmitEmpty),
        field(2, "namespace", Kind::String, OmitEmpty),
        field(3, "selector", Kind::Message(&meta::LABEL_SELECTOR), IfSet),
        field(4, "parameterNotFoundAction", Kind::String, IfSet),
    ],
);
