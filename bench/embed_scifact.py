"""Embed the SciFact corpus and claims with the packaged MiniLM int8 ONNX model (fastembed's pipeline,
re-implemented with onnxruntime + tokenizers so it runs on any machine with those two packages).
Usage: python bench/embed_scifact.py MODEL_DIR DATA_DIR OUT_DIR [limit]"""
import json, sys, time, os
from pathlib import Path
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer

def load(model_dir, threads):
    tok = Tokenizer.from_file(str(Path(model_dir)/"tokenizer.json"))
    tok.enable_truncation(max_length=512)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    so = ort.SessionOptions(); so.intra_op_num_threads = threads
    return tok, ort.InferenceSession(str(Path(model_dir)/"model.onnx"), so, providers=["CPUExecutionProvider"])

def embed(tok, sess, texts, bs=32):
    names = {i.name for i in sess.get_inputs()}
    order = np.argsort([len(t) for t in texts]); out = np.zeros((len(texts), 384), np.float32)
    for s in range(0, len(texts), bs):
        idx = order[s:s+bs]; enc = tok.encode_batch([texts[i] for i in idx])
        ids = np.array([e.ids for e in enc], np.int64); am = np.array([e.attention_mask for e in enc], np.int64)
        feed = {"input_ids": ids, "attention_mask": am}
        if "token_type_ids" in names: feed["token_type_ids"] = np.zeros_like(ids)
        h = sess.run(None, feed)[0]
        m = am[..., None].astype(np.float32)
        v = (h*m).sum(1)/np.clip(m.sum(1), 1e-9, None)
        out[idx] = v/np.linalg.norm(v, axis=1, keepdims=True)
    return out

if __name__ == "__main__":
    model_dir, data, outd = map(Path, sys.argv[1:4]); lim = int(sys.argv[4]) if len(sys.argv) > 4 else None
    tok, sess = load(model_dir, os.cpu_count())
    docs = [json.loads(l) for l in open(data/"corpus.jsonl")][:lim]
    qs = [json.loads(l) for l in open(data/"queries.jsonl")][:lim]
    t = time.time()
    D = embed(tok, sess, [d["title"] + "\n" + d["text"] for d in docs])
    Q = embed(tok, sess, [q["text"] for q in qs])
    outd.mkdir(parents=True, exist_ok=True)
    np.save(outd/"scifact_corpus.npy", D); np.save(outd/"scifact_queries.npy", Q)
    (outd/"scifact_ids.json").write_text(json.dumps({"corpus": [d["_id"] for d in docs], "queries": [q["_id"] for q in qs]}))
    print("embedded", D.shape, Q.shape, round(time.time()-t, 1), "s")
