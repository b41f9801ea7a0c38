//! `k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1` (apiextensions.k8s.io/v1): field numbers and types from its `generated.proto`, JSON names and
//! pointer-ness from its Go types.

use super::meta;
use super::model::Shape;
use super::model::{Emit::*, Kind, Message, field};

/// `CustomResourceDefinition`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION: Message = Message::new(
    "CustomResourceDefinition",
    &[
        field(1, "metadata", Kind::Message(&meta::OBJECT_META), Always),
        field(
            2,
            "spec",
            Kind::Message(&CUSTOM_RESOURCE_DEFINITION_SPEC),
            Always,
        ),
        field(
            3,
            "status",
            Kind::Message(&CUSTOM_RESOURCE_DEFINITION_STATUS),
            Always,
        ),
    ],
);

/// `CustomResourceDefinitionSpec`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION_SPEC: Message = Message::new(
    "CustomResourceDefinitionSpec",
    &[
        field(1, "group", Kind::String, Always),
        field(
            3,
            "names",
            Kind::Message(&CUSTOM_RESOURCE_DEFINITION_NAMES),
            Always,
        ),
        field(4, "scope", Kind::String, Always),
        field(
            7,
            "versions",
            Kind::Messages(&CUSTOM_RESOURCE_DEFINITION_VERSION),
            Always,
        ),
        field(
            9,
            "conversion",
            Kind::Message(&CUSTOM_RESOURCE_CONVERSION),
            IfSet,
        ),
        field(10, "preserveUnknownFields", Kind::Bool, OmitEmpty),
    ],
);

/// `CustomResourceDefinitionNames`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION_NAMES: Message = Message::new(
    "CustomResourceDefinitionNames",
    &[
        field(1, "plural", Kind::String, Always),
        field(2, "singular", Kind::String, OmitEmpty),
        field(3, "shortNames", Kind::Strings, OmitEmpty),
        field(4, "kind", Kind::String, Always),
        field(5, "listKind", Kind::String, OmitEmpty),
        field(6, "categories", Kind::Strings, OmitEmpty),
    ],
);

/// `CustomResourceDefinitionVersion`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION_VERSION: Message = Message::new(
    "CustomResourceDefinitionVersion",
    &[
        field(1, "name", Kind::String, Always),
        field(2, "served", Kind::Bool, Always),
        field(3, "storage", Kind::Bool, Always),
        field(7, "deprecated", Kind::Bool, OmitEmpty),
        field(8, "deprecationWarning", Kind::String, IfSet),
        field(
            4,
            "schema",
            Kind::Message(&CUSTOM_RESOURCE_VALIDATION),
            IfSet,
        ),
        field(
            5,
            "subresources",
            Kind::Message(&CUSTOM_RESOURCE_SUBRESOURCES),
            IfSet,
        ),
        field(
            6,
            "additionalPrinterColumns",
            Kind::Messages(&CUSTOM_RESOURCE_COLUMN_DEFINITION),
            OmitEmpty,
        ),
        field(
            9,
            "selectableFields",
            Kind::Messages(&SELECTABLE_FIELD),
            OmitEmpty,
        ),
    ],
);

/// `CustomResourceValidation`.
pub(crate) static CUSTOM_RESOURCE_VALIDATION: Message = Message::new(
    "CustomResourceValidation",
    &[field(
        1,
        "openAPIV3Schema",
        Kind::Message(&JSON_SCHEMA_PROPS),
        IfSet,
    )],
);

/// `JSONSchemaProps`.
pub(crate) static JSON_SCHEMA_PROPS: Message = Message::new(
    "JSONSchemaProps",
    &[
        field(1, "id", Kind::String, OmitEmpty),
        field(2, "$schema", Kind::String, OmitEmpty),
        field(3, "$ref", Kind::String, IfSet),
        field(4, "description", Kind::String, OmitEmpty),
        field(5, "type", Kind::String, OmitEmpty),
        field(6, "format", Kind::String, OmitEmpty),
        field(7, "title", Kind::String, OmitEmpty),
        field(8, "default", Kind::RawJson, IfSet),
        field(9, "maximum", Kind::Double, IfSet),
        field(10, "exclusiveMaximum", Kind::Bool, OmitEmpty),
        field(11, "minimum", Kind::Double, IfSet),
        field(12, "exclusiveMinimum", Kind::Bool, OmitEmpty),
        field(13, "maxLength", Kind::Int64, IfSet),
        field(14, "minLength", Kind::Int64, IfSet),
        field(15, "pattern", Kind::String, OmitEmpty),
        field(16, "maxItems", Kind::Int64, IfSet),
        field(17, "minItems", Kind::Int64, IfSet),
        field(18, "uniqueItems", Kind::Bool, OmitEmpty),
        field(19, "multipleOf", Kind::Double, IfSet),
        field(20, "enum", Kind::RawJsons, OmitEmpty),
        field(21, "maxProperties", Kind::Int64, IfSet),
        field(22, "minProperties", Kind::Int64, IfSet),
        field(23, "required", Kind::Strings, OmitEmpty),
        field(
            24,
            "items",
            Kind::Message(&JSON_SCHEMA_PROPS_OR_ARRAY),
            IfSet,
        ),
        field(25, "allOf", Kind::Messages(&JSON_SCHEMA_PROPS), OmitEmpty),
        field(26, "oneOf", Kind::Messages(&JSON_SCHEMA_PROPS), OmitEmpty),
        field(27, "anyOf", Kind::Messages(&JSON_SCHEMA_PROPS), OmitEmpty),
        field(28, "not", Kind::Message(&JSON_SCHEMA_PROPS), IfSet),
        field(
            29,
            "properties",
            Kind::MessageMap(&JSON_SCHEMA_PROPS),
            OmitEmpty,
        ),
        field(
            30,
            "additionalProperties",
            Kind::Message(&JSON_SCHEMA_PROPS_OR_BOOL),
            IfSet,
        ),
        field(
            31,
            "patternProperties",
            Kind::MessageMap(&JSON_SCHEMA_PROPS),
            OmitEmpty,
        ),
        field(
            32,
            "dependencies",
            Kind::MessageMap(&JSON_SCHEMA_PROPS_OR_STRING_ARRAY),
            OmitEmpty,
        ),
        field(
            33,
            "additionalItems",
            Kind::Message(&JSON_SCHEMA_PROPS_OR_BOOL),
            IfSet,
        ),
        field(
            34,
            "definitions",
            Kind::MessageMap(&JSON_SCHEMA_PROPS),
            OmitEmpty,
        ),
        field(
            35,
            "externalDocs",
            Kind::Message(&EXTERNAL_DOCUMENTATION),
            IfSet,
        ),
        field(36, "example", Kind::RawJson, IfSet),
        field(37, "nullable", Kind::Bool, OmitEmpty),
        field(
            38,
            "x-kubernetes-preserve-unknown-fields",
            Kind::Bool,
            IfSet,
        ),
        field(39, "x-kubernetes-embedded-resource", Kind::Bool, OmitEmpty),
        field(40, "x-kubernetes-int-or-string", Kind::Bool, OmitEmpty),
        field(41, "x-kubernetes-list-map-keys", Kind::Strings, OmitEmpty),
        field(42, "x-kubernetes-list-type", Kind::String, IfSet),
        field(43, "x-kubernetes-map-type", Kind::String, IfSet),
        field(
            44,
            "x-kubernetes-validations",
            Kind::Messages(&VALIDATION_RULE),
            OmitEmpty,
        ),
    ],
);

/// `JSONSchemaPropsOrArray`.
pub(crate) static JSON_SCHEMA_PROPS_OR_ARRAY: Message = Message::shaped(
    "JSONSchemaPropsOrArray",
    &[
        field(1, "schema", Kind::Message(&JSON_SCHEMA_PROPS), IfSet),
        field(2, "jSONSchemas", Kind::Messages(&JSON_SCHEMA_PROPS), Always),
    ],
    Shape::SchemaOrArray,
);

/// `JSONSchemaPropsOrBool`.
pub(crate) static JSON_SCHEMA_PROPS_OR_BOOL: Message = Message::shaped(
    "JSONSchemaPropsOrBool",
    &[
        field(1, "allows", Kind::Bool, Always),
        field(2, "schema", Kind::Message(&JSON_SCHEMA_PROPS), IfSet),
    ],
    Shape::SchemaOrBool,
);

/// `JSONSchemaPropsOrStringArray`.
pub(crate) static JSON_SCHEMA_PROPS_OR_STRING_ARRAY: Message = Message::shaped(
    "JSONSchemaPropsOrStringArray",
    &[
        field(1, "schema", Kind::Message(&JSON_SCHEMA_PROPS), IfSet),
        field(2, "property", Kind::Strings, Always),
    ],
    Shape::SchemaOrStrings,
);

/// `ExternalDocumentation`.
pub(crate) static EXTERNAL_DOCUMENTATION: Message = Message::new(
    "ExternalDocumentation",
    &[
        field(1, "description", Kind::String, OmitEmpty),
        field(2, "url", Kind::String, OmitEmpty),
    ],
);

/// `ValidationRule`.
pub(crate) static VALIDATION_RULE: Message = Message::new(
    "ValidationRule",
    &[
        field(1, "rule", Kind::String, Always),
        field(2, "message", Kind::String, OmitEmpty),
        field(3, "messageExpression", Kind::String, OmitEmpty),
        field(4, "reason", Kind::String, IfSet),
        field(5, "fieldPath", Kind::String, OmitEmpty),
        field(6, "optionalOldSelf", Kind::Bool, IfSet),
    ],
);

/// `CustomResourceSubresources`.
pub(crate) static CUSTOM_RESOURCE_SUBRESOURCES: Message = Message::new(
    "CustomResourceSubresources",
    &[
        field(
            1,
            "status",
            Kind::Message(&CUSTOM_RESOURCE_SUBRESOURCE_STATUS),
            IfSet,
        ),
        field(
            2,
            "scale",
            Kind::Message(&CUSTOM_RESOURCE_SUBRESOURCE_SCALE),
            IfSet,
        ),
    ],
);

/// `CustomResourceSubresourceStatus`.
pub(crate) static CUSTOM_RESOURCE_SUBRESOURCE_STATUS: Message =
    Message::new("CustomResourceSubresourceStatus", &[]);

/// `CustomResourceSubresourceScale`.
pub(crate) static CUSTOM_RESOURCE_SUBRESOURCE_SCALE: Message = Message::new(
    "CustomResourceSubresourceScale",
    &[
        field(1, "specReplicasPath", Kind::String, Always),
        field(2, "statusReplicasPath", Kind::String, Always),
        field(3, "labelSelectorPath", Kind::String, IfSet),
    ],
);

/// `CustomResourceColumnDefinition`.
pub(crate) static CUSTOM_RESOURCE_COLUMN_DEFINITION: Message = Message::new(
    "CustomResourceColumnDefinition",
    &[
        field(1, "name", Kind::String, Always),
        field(2, "type", Kind::String, Always),
        field(3, "format", Kind::String, OmitEmpty),
        field(4, "description", Kind::String, OmitEmpty),
        field(5, "priority", Kind::Int32, OmitEmpty),
        field(6, "jsonPath", Kind::String, Always),
    ],
);

/// `SelectableField`.
pub(crate) static SELECTABLE_FIELD: Message = Message::new(
    "SelectableField",
    &[field(1, "jsonPath", Kind::String, Always)],
);

/// `CustomResourceConversion`.
pub(crate) static CUSTOM_RESOURCE_CONVERSION: Message = Message::new(
    "CustomResourceConversion",
    &[
        field(1, "strategy", Kind::String, Always),
        field(2, "webhook", Kind::Message(&WEBHOOK_CONVERSION), IfSet),
    ],
);

/// `WebhookConversion`.
pub(crate) static WEBHOOK_CONVERSION: Message = Message::new(
    "WebhookConversion",
    &[
        field(
            2,
            "clientConfig",
            Kind::Message(&WEBHOOK_CLIENT_CONFIG),
            IfSet,
        ),
        field(3, "conversionReviewVersions", Kind::Strings, Always),
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

/// `CustomResourceDefinitionStatus`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION_STATUS: Message = Message::new(
    "CustomResourceDefinitionStatus",
    &[
        field(
            1,
            "conditions",
            Kind::Messages(&CUSTOM_RESOURCE_DEFINITION_CONDITION),
            Always,
        ),
        field(
            2,
            "acceptedNames",
            Kind::Message(&CUSTOM_RESOURCE_DEFINITION_NAMES),
            Always,
        ),
        field(3, "storedVersions", Kind::Strings, Always),
        field(4, "observedGeneration", Kind::Int64, OmitEmpty),
    ],
);

/// `CustomResourceDefinitionCondition`.
pub(crate) static CUSTOM_RESOURCE_DEFINITION_CONDITION: Message = Message::new(
    "CustomResourceDefinitionCondition",
    &[
        field(1, "type", Kind::String, Always),
        field(2, "status", Kind::String, Always),
        field(3, "lastTransitionTime", Kind::Time, Always),
        field(4, "reason", Kind::String, OmitEmpty),
        field(5, "message", Kind::String, OmitEmpty),
        field(6, "observedGeneration", Kind::Int64, OmitEmpty),
    ],
);
