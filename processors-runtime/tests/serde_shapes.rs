//! Messages and chunks round-trip through serde in the documented JSON shapes.

use processors_runtime::agent::ApprovalRequest;
use processors_runtime::chunk::{Chunk, ChunkFrom, ChunkKind, FinishReason, StepRetry, Usage};
use processors_runtime::message::{Message, Part, Role, ToolCall, ToolResult};
use processors_runtime::tripwire::TripWire;
use serde_json::json;

fn approval_request() -> ApprovalRequest {
    ApprovalRequest {
        run_id: "run-1".into(),
        tool_call_id: "c".into(),
        tool_name: "refund".into(),
        args: json!({"order": 7}),
        processor_id: "ask".into(),
        reason: "moves money".into(),
    }
}

fn every_kind() -> Vec<ChunkKind> {
    vec![
        ChunkKind::Start,
        ChunkKind::StepStart { step_number: 2 },
        ChunkKind::TextStart { id: "t".into() },
        ChunkKind::TextDelta {
            id: "t".into(),
            text: "hi".into(),
        },
        ChunkKind::TextEnd { id: "t".into() },
        ChunkKind::ReasoningStart { id: "r".into() },
        ChunkKind::ReasoningDelta {
            id: "r".into(),
            text: "hm".into(),
        },
        ChunkKind::ReasoningEnd { id: "r".into() },
        ChunkKind::ToolCallDelta {
            tool_call_id: "c".into(),
            tool_name: "w".into(),
            args_text_delta: "{\"ci".into(),
        },
        ChunkKind::ToolCall(ToolCall {
            tool_call_id: "c".into(),
            tool_name: "w".into(),
            args: json!({"city": "Oslo"}),
        }),
        ChunkKind::ToolResult(Box::new(ToolResult {
            tool_call_id: "c".into(),
            tool_name: "w".into(),
            result: json!(21),
            is_error: false,
            model_output: None,
        })),
        ChunkKind::ToolError {
            tool_call_id: "c".into(),
            tool_name: "w".into(),
            error: "down".into(),
        },
        ChunkKind::StepFinish {
            finish_reason: FinishReason::ToolCalls,
            usage: Usage::default(),
            is_continued: true,
            retry: None,
        },
        ChunkKind::StepFinish {
            finish_reason: FinishReason::Retry,
            usage: Usage::default(),
            is_continued: true,
            retry: Some(Box::new(StepRetry {
                reason: "too long".into(),
                metadata: Some(json!({"limit": 10})),
                processor_id: "guard".into(),
                retry_count: 1,
                feedback: Some("[Processor Feedback] …".into()),
            })),
        },
        ChunkKind::Finish {
            finish_reason: FinishReason::Stop,
            usage: Usage {
                input_tokens: 1,
                output_tokens: 2,
                total_tokens: 3,
            },
        },
        ChunkKind::Error {
            message: "bad".into(),
        },
        ChunkKind::Tripwire(TripWire {
            reason: "no".into(),
            retry: true,
            metadata: Some(json!({"k": 1})),
            processor_id: "guard".into(),
        }),
        ChunkKind::ToolApprovalRequest(Box::new(approval_request())),
        ChunkKind::ToolCallResumed(Box::new(ToolCall {
            tool_call_id: "c".into(),
            tool_name: "refund".into(),
            args: json!({"order": 7}),
        })),
        ChunkKind::Finish {
            finish_reason: FinishReason::AwaitingApproval,
            usage: Usage::default(),
        },
        ChunkKind::Data {
            name: "progress".into(),
            data: json!({"pct": 50}),
            transient: false,
        },
        ChunkKind::Data {
            name: "preview".into(),
            data: json!("x"),
            transient: true,
        },
    ]
}

#[test]
fn every_chunk_kind_round_trips() {
    for kind in every_kind() {
        let chunk = Chunk::new("run-1".into(), kind);
        let json = serde_json::to_value(&chunk).unwrap();
        assert_eq!(json["runId"], "run-1");
        assert_eq!(json["from"], "AGENT");
        assert_eq!(json["type"], chunk.kind.type_name().as_ref());
        let back: Chunk = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, chunk, "{json}");
    }
}

#[test]
fn chunk_json_shapes() {
    let c = Chunk::new(
        "r".into(),
        ChunkKind::TextDelta {
            id: "t".into(),
            text: "hi".into(),
        },
    );
    assert_eq!(
        serde_json::to_value(&c).unwrap(),
        json!({"type": "text-delta", "runId": "r", "from": "AGENT", "payload": {"id": "t", "text": "hi"}})
    );
    let d = Chunk::new(
        "r".into(),
        ChunkKind::Data {
            name: "progress".into(),
            data: json!(1),
            transient: true,
        },
    );
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        json!({"type": "data-progress", "runId": "r", "from": "AGENT", "payload": {"data": 1, "transient": true}})
    );
    let t = Chunk::new(
        "r".into(),
        ChunkKind::Tripwire(TripWire {
            reason: "no".into(),
            retry: false,
            metadata: None,
            processor_id: "g".into(),
        }),
    );
    // `retry` is left out when it was not asked for.
    assert_eq!(
        serde_json::to_value(&t).unwrap()["payload"],
        json!({"reason": "no", "processorId": "g"})
    );
    let back: TripWire =
        serde_json::from_value(json!({"reason": "no", "processorId": "g"})).unwrap();
    assert!(!back.retry);
    let retried = TripWire {
        retry: true,
        ..back
    };
    assert_eq!(
        serde_json::to_value(&retried).unwrap(),
        json!({"reason": "no", "retry": true, "processorId": "g"})
    );
    let a = Chunk::new(
        "r".into(),
        ChunkKind::ToolApprovalRequest(Box::new(approval_request())),
    );
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({"type": "tool-approval-request", "runId": "r", "from": "AGENT", "payload": {
            "runId": "run-1", "toolCallId": "c", "toolName": "refund", "args": {"order": 7},
            "processorId": "ask", "reason": "moves money"
        }})
    );
    let resumed = ChunkKind::ToolCallResumed(Box::new(ToolCall {
        tool_call_id: "c".into(),
        tool_name: "refund".into(),
        args: json!({"order": 7}),
    }));
    assert_eq!(
        serde_json::to_value(Chunk::new("r".into(), resumed)).unwrap(),
        json!({"type": "tool-call-resumed", "runId": "r", "from": "AGENT", "payload": {
            "toolCallId": "c", "toolName": "refund", "args": {"order": 7}
        }})
    );
    assert_eq!(
        serde_json::to_value(FinishReason::AwaitingApproval).unwrap(),
        "awaiting-approval"
    );
    let s = Chunk::new("r".into(), ChunkKind::Start);
    let back: Chunk =
        serde_json::from_value(json!({"type": "start", "runId": "r", "from": "AGENT"})).unwrap();
    assert_eq!(back, s);
    let mut w = s.clone();
    w.from = ChunkFrom::Workflow;
    assert_eq!(serde_json::to_value(&w).unwrap()["from"], "WORKFLOW");
}

#[test]
fn unknown_chunk_types_are_an_error_not_a_panic() {
    let err =
        serde_json::from_value::<Chunk>(json!({"type": "nonsense", "runId": "r"})).unwrap_err();
    assert!(err.to_string().contains("nonsense"), "{err}");
    assert!(
        serde_json::from_value::<Chunk>(json!({"type": "text-delta", "runId": "r", "payload": {}}))
            .is_err()
    );
    assert!(serde_json::from_value::<Chunk>(json!({"runId": "r"})).is_err());
}

#[test]
fn messages_round_trip_with_every_part() {
    let mut m = Message::new(
        Role::Assistant,
        vec![
            Part::Text {
                text: "hello".into(),
            },
            Part::Reasoning {
                text: "thinking".into(),
            },
            Part::ToolCall(ToolCall {
                tool_call_id: "c".into(),
                tool_name: "w".into(),
                args: json!({}),
            }),
            Part::ToolResult(ToolResult {
                tool_call_id: "c".into(),
                tool_name: "w".into(),
                result: json!(1),
                is_error: true,
                model_output: None,
            }),
            Part::File {
                mime_type: "image/png".into(),
                data: "aGk=".into(),
            },
            Part::Data {
                name: "progress".into(),
                data: json!(3),
            },
        ],
    );
    m.thread_id = Some("t".into());
    m.metadata = Some(json!({"lang": "en"}));
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["content"]["format"], 2);
    assert_eq!(json["content"]["parts"][2]["type"], "tool-call");
    assert_eq!(json["content"]["parts"][2]["toolCallId"], "c");
    assert_eq!(json["threadId"], "t");
    let back: Message = serde_json::from_value(json).unwrap();
    assert_eq!(back, m);
}

#[test]
fn set_text_keeps_other_parts() {
    let mut m = Message::new(
        Role::Assistant,
        vec![
            Part::Text { text: "a".into() },
            Part::ToolCall(ToolCall {
                tool_call_id: "c".into(),
                tool_name: "w".into(),
                args: json!({}),
            }),
            Part::Text { text: "b".into() },
        ],
    );
    m.set_text("new");
    assert_eq!(m.text(), "new");
    assert_eq!(m.content.parts.len(), 2);
    assert_eq!(m.tool_calls().count(), 1);
}

#[test]
fn a_retried_step_finish_carries_the_retry_fields_mastra_clients_read() {
    let c = Chunk::new(
        "r".into(),
        ChunkKind::StepFinish {
            finish_reason: FinishReason::Retry,
            usage: Usage::default(),
            is_continued: true,
            retry: Some(Box::new(StepRetry {
                reason: "too long".into(),
                metadata: None,
                processor_id: "guard".into(),
                retry_count: 1,
                feedback: Some("try again".into()),
            })),
        },
    );
    let payload = serde_json::to_value(&c).unwrap()["payload"].clone();
    assert_eq!(
        payload,
        json!({
            "finishReason": "retry",
            "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0},
            "isContinued": true,
            "retryReason": "too long",
            "retryProcessorId": "guard",
            "processorRetryCount": 1,
            "processorRetryFeedback": "try again"
        })
    );
    let plain = ChunkKind::StepFinish {
        finish_reason: FinishReason::Stop,
        usage: Usage::default(),
        is_continued: false,
        retry: None,
    };
    let json = serde_json::to_value(Chunk::new("r".into(), plain.clone())).unwrap();
    assert!(json["payload"].get("retryReason").is_none());
    let back: Chunk = serde_json::from_value(json).unwrap();
    assert_eq!(back.kind, plain);
}
