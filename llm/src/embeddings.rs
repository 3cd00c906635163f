//! Reading an `/embeddings` answer: `data[].embedding`, put back in input order by `index`.

use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

/// The vectors of `body`, one per input in input order; an answer with a missing, repeated or
/// extra index is refused (a vector attached to the wrong text would poison recall silently).
pub(crate) fn vectors(body: Value, expected: usize) -> Result<Vec<Vec<f32>>, String> {
    let answer: Answer = serde_json::from_value(body)
        .map_err(|e| format!("the embeddings answer is not `data[].embedding`: {e}"))?;
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for item in answer.data {
        let slot = vectors
            .get_mut(item.index)
            .ok_or_else(|| format!("embedding index {} for {expected} inputs", item.index))?;
        if slot.replace(item.embedding).is_some() {
            return Err(format!("embedding index {} answered twice", item.index));
        }
    }
    vectors
        .into_iter()
        .enumerate()
        .map(|(index, vector)| vector.ok_or_else(|| format!("no embedding for input {index}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::vectors;
    use serde_json::json;

    #[test]
    fn vectors_come_back_in_input_order() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0], "object": "embedding"},
            {"index": 0, "embedding": [1.0, 0.0], "object": "embedding"}
        ], "model": "m"});
        assert_eq!(
            vectors(body, 2).expect("decodes"),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn a_missing_or_repeated_index_is_refused() {
        let missing = json!({"data": [{"index": 0, "embedding": [1.0]}]});
        assert!(
            vectors(missing, 2)
                .unwrap_err()
                .contains("no embedding for input 1")
        );
        let repeated = json!({"data": [
            {"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}
        ]});
        assert!(vectors(repeated, 2).unwrap_err().contains("answered twice"));
        let beyond = json!({"data": [{"index": 5, "embedding": [1.0]}]});
        assert!(vectors(beyond, 1).unwrap_err().contains("index 5"));
        assert!(vectors(json!({"error": "x"}), 1).is_err());
    }
}
