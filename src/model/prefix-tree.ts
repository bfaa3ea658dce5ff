/**
 * A batch of token sequences as a prefix tree: one node per distinct prefix, so rows that several
 * sequences share (a GRPO group's prompt, read once per sample) are one node. With causal
 * attention a row's hidden state depends on its prefix alone, so a forward over the nodes
 * (DecoderCpu with ForwardInput.readRows, kernels/attention_gqa_train_ref.ts attentionGqaTreeRef)
 * gives every row the numbers its own sequence gives it, and computes each shared prefix once.
 *
 * Only the rows a caller reads and the rows before them in their sequence become nodes: a
 * right-padded batch's padding after the last read row is not computed at all.
 */

export interface PrefixTree {
  /** N: the distinct prefixes */
  size: number;
  /** (N) each node's last token */
  tokens: Int32Array;
  /** (N) each node's position (its depth: 0 at a sequence's first token) */
  positions: Int32Array;
  /** (B * T) the node of row (b, t), or -1 for a row after sequence b's last read row */
  rowNode: Int32Array;
  /** node u's chain, chainNodes[chainStart[u] .. chainStart[u + 1]): its ancestors from the root, then u */
  chainStart: Int32Array;
  chainNodes: Int32Array;
}

/**
 * The prefix tree of the (B, T) batch `tokens` over the rows where `readRows` is nonzero and every
 * row before them in the same sequence. Nodes are numbered in first-seen order, so a parent
 * always comes before its children.
 */
export function prefixTree(tokens: ArrayLike<number>, B: number, T: number, readRows: ArrayLike<number>): PrefixTree {
  if (tokens.length !== B * T) throw new Error(`prefixTree: ${tokens.length} tokens for (B, T) = (${B}, ${T})`);
  if (readRows.length !== B * T) throw new Error(`prefixTree: ${readRows.length} read-row flags for (B, T) = (${B}, ${T})`);
  const rowNode = new Int32Array(B * T).fill(-1);
  const parent: number[] = [];
  const tok: number[] = [];
  const depth: number[] = [];
  // children of each node by token; the roots' map is keyed by the first token
  const children: Map<number, number>[] = [];
  const roots = new Map<number, number>();
  for (let b = 0; b < B; b++) {
    let last = -1;
    for (let t = T - 1; t >= 0 && last < 0; t--) if (readRows[b * T + t]) last = t;
    let at = -1;
    for (let t = 0; t <= last; t++) {
      const id = tokens[b * T + t]!;
      const map = at < 0 ? roots : children[at]!;
      let node = map.get(id);
      if (node === undefined) {
        node = tok.length;
        map.set(id, node);
        parent.push(at);
        tok.push(id);
        depth.push(t);
        children.push(new Map());
      }
      rowNode[b * T + t] = node;
      at = node;
    }
  }
  const N = tok.length;
  const chainStart = new Int32Array(N + 1);
  for (let u = 0; u < N; u++) chainStart[u + 1] = chainStart[u]! + depth[u]! + 1;
  const chainNodes = new Int32Array(chainStart[N]!);
  for (let u = 0; u < N; u++) {
    const p = parent[u]!;
    const c = chainStart[u]!;
    if (p >= 0) chainNodes.set(chainNodes.subarray(chainStart[p]!, chainStart[p + 1]!), c);
    chainNodes[c + depth[u]!] = u;
  }
  return { size: N, tokens: Int32Array.from(tok), positions: Int32Array.from(depth), rowNode, chainStart, chainNodes };
}
