"""What a fresh Python process sees of a SavedModel export (run by
`model_families.FamilyArtifacts.fresh` as `python -c <this file> ARGS`).

Nothing of the exporting process (registered functions, Python objects) can
leak into what the SavedModel does here. ARGS is JSON: `export_dir`, `ops`
(op names to look up), `metadata` (the export's JSON), `warmup_file` (or
null), `batch` (`{"text": [...], <task input>: [...]}`), `option_sets`
(`[[beam_size, alpha, beta], ...]`), `too_long` (a sentence over the
limit) and `bad_requests` (`{name: {input: values}}`). It prints
`RESULT<json>` with:

- `core_ops` / `registered_ops`: those of `ops` TensorFlow knows before /
  after importing tensorflow_text;
- `signatures`: every signature's input and output dtypes and shapes;
- `serving_default`, `with_options["k,alpha,beta"]`: translations and
  scores of `batch`;
- `host_greedy`: a greedy search over `encode` + `decode_step` driven from
  here (`rows` of the batch, `translations`, `scores`, and each row's
  smallest top-1 minus top-2 log-prob `margins`);
- `errors`: the error message (or null) of `translate_with_options` with
  beam size 99, invalid UTF-8, `too_long`, and each of `bad_requests`;
- `warmup`: the replayed warm-up requests (`[model, signature, inputs,
  rows]`), or null without a warm-up file.
"""

import json
import math
import sys

import gnmt_tf  # noqa: F401  (only sets TF_USE_LEGACY_KERAS / log level)

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

args = json.loads(sys.argv[1])
out = {"core_ops": sorted(op for op in args["ops"]
                          if op_def_registry.get(op) is not None)}
import tensorflow_text  # noqa: E402,F401  (the model server links these ops)

out["registered_ops"] = sorted(op for op in args["ops"]
                               if op_def_registry.get(op) is not None)

sigs = tf.saved_model.load(args["export_dir"]).signatures
out["signatures"] = {
    name: {"inputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in
                      f.structured_input_signature[1].items()},
           "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in
                       f.structured_outputs.items()}}
    for name, f in sigs.items()}


def texts(result):
    return {"translations": [t.decode("utf-8") for t in
                             result["translations"].numpy()],
            "scores": result["scores"].numpy().tolist()}


batch = {k: tf.constant(v) for k, v in args["batch"].items()}
task_names = [k for k in args["batch"] if k != "text"]
out["serving_default"] = texts(sigs["serving_default"](**batch))
out["with_options"] = {}
for k, alpha, beta in args["option_sets"]:
    out["with_options"][f"{k},{alpha},{beta}"] = texts(
        sigs["translate_with_options"](
            **batch, beam_size=tf.constant(k, tf.int32),
            length_penalty=tf.constant(alpha, tf.float32),
            coverage_penalty=tf.constant(beta, tf.float32)))

# Greedy search on the host, over encode + decode_step.
meta = args["metadata"]
rows = [i for i, t in enumerate(args["batch"]["text"]) if t.strip()]
sp = tensorflow_text.SentencepieceTokenizer(
    tf.io.gfile.GFile(args["export_dir"] + "/assets/spm.model", "rb").read())
tokens = [sp.tokenize(args["batch"]["text"][i]).numpy().tolist()
          + [meta["eos_id"]] for i in rows]
width = max(map(len, tokens))
state = dict(sigs["encode"](
    source_ids=tf.constant([t + [0] * (width - len(t)) for t in tokens],
                           tf.int32),
    **{k: tf.gather(batch[k], rows) for k in task_names}))
limit = meta.get("max_target_length") or math.inf
max_lengths = [min(math.ceil(2 * len(t)), limit) for t in tokens]
ids = np.full([len(rows)], meta["bos_id"], np.int32)
outputs, scores = [[] for _ in rows], [0.0] * len(rows)
margins = [math.inf] * len(rows)
done = [False] * len(rows)
for t in range(max(max_lengths)):
    step = sigs["decode_step"](ids=tf.constant(ids), **state)
    log_probs = step["log_probs"].numpy()
    ids = log_probs.argmax(-1).astype(np.int32)
    top2 = np.sort(log_probs, axis=-1)[:, -2:]
    for r in range(len(rows)):
        if not done[r]:
            outputs[r].append(int(ids[r]))
            scores[r] += float(log_probs[r, ids[r]])
            margins[r] = min(margins[r], float(top2[r, 1] - top2[r, 0]))
            done[r] = ids[r] == meta["eos_id"] or t + 1 >= max_lengths[r]
    state.update({k: v for k, v in step.items()
                  if k not in ("log_probs", "attention")})
    if all(done):
        break
out["host_greedy"] = {
    "rows": rows, "scores": scores, "margins": margins,
    "translations": [
        sp.detokenize([i for i in o if i != meta["eos_id"]]).numpy().decode()
        for o in outputs]}

errors = {}


def error(name, signature="serving_default", **changes):
    request = {k: tf.constant(v) for k, v in
               dict(args["batch"], **changes).items()}
    if signature == "translate_with_options":
        request.update(beam_size=tf.constant(99, tf.int32),
                       length_penalty=tf.constant(0.6),
                       coverage_penalty=tf.constant(0.0))
    try:
        sigs[signature](**request)
        errors[name] = None
    except tf.errors.InvalidArgumentError as e:
        errors[name] = e.message


n = len(args["batch"]["text"])
error("beam_size", "translate_with_options")
error("utf8", text=[b"caf\xc3"] * n)
error("too_long", text=[args["too_long"]] * n)
for name, changes in args["bad_requests"].items():
    error(name, **changes)
out["errors"] = errors

out["warmup"] = None
if args["warmup_file"]:
    from tensorflow_serving.apis import prediction_log_pb2

    out["warmup"] = []
    for record in tf.data.TFRecordDataset(args["warmup_file"]):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        request = log.predict_log.request
        inputs = {k: tf.constant(tf.make_ndarray(v))
                  for k, v in request.inputs.items()}
        result = sigs[request.model_spec.signature_name](**inputs)
        out["warmup"].append([request.model_spec.name,
                              request.model_spec.signature_name,
                              sorted(inputs),
                              int(result["translations"].shape[0])])
print("RESULT" + json.dumps(out))
