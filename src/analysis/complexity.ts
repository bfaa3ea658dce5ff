/**
 * Per-function complexity from tree-sitter's tree (so it works on code that does not parse):
 *  - cyclomatic: McCabe, counted like ESLint's `complexity` rule (classic variant): 1, plus one
 *    per if, ?:, for, for-in/of, while, do, catch, `case x:`, &&, ||, ??, &&=, ||=, ??=, default
 *    value (`a = 1` in parameters or patterns) and optional call or member (`?.`).
 *  - cognitive: SonarSource's definition (G. Ann Campbell, 2017), direct recursion included:
 *    +1 for if, else if, else, ?:, switch, for, for-in/of, while, do, catch, a labelled
 *    break/continue, each run of like logical operators (`a && b || c` is 2) and each direct
 *    recursive call; if, ?:, switch, loops and catch add their nesting level too. Nesting grows
 *    inside their bodies and inside nested functions, whose increments count for every enclosing
 *    function as well (so an outer function includes its callbacks, as Sonar does).
 *  - nesting: the deepest nesting of if (not else-if), switch, try, loops and with, per function,
 *    counted like ESLint's `max-depth`.
 */
import type { Node } from 'web-tree-sitter';

export interface FunctionMetrics {
  name: string;
  /** The function's range (offsets into the analysed text). */
  start: number;
  end: number;
  /** The head: from the start of the function to its body. */
  headEnd: number;
  cyclomatic: number;
  cognitive: number;
  maxNesting: number;
  /** The first statement at the deepest nesting (null when nothing nests). */
  deepest: { start: number; end: number } | null;
  params: number;
  lines: number;
}

export interface ComplexityReport {
  functions: FunctionMetrics[];
  /** Cognitive increments located in `[from, to)`, summed (Sonar's file-level complexity). */
  cognitiveInRange: number;
  /** Nesting depth of code outside any function. */
  topLevelNesting: number;
}

const FUNCTION_TYPES = new Set([
  'function_declaration',
  'function_expression',
  'arrow_function',
  'method_definition',
  'generator_function_declaration',
  'generator_function',
  'class_static_block',
]);
const LOOP_TYPES = new Set(['for_statement', 'for_in_statement', 'while_statement', 'do_statement']);
const DEPTH_TYPES = new Set([...LOOP_TYPES, 'if_statement', 'switch_statement', 'try_statement', 'with_statement']);
const LOGICAL = new Set(['&&', '||', '??']);
const LOGICAL_ASSIGN = new Set(['&&=', '||=', '??=']);

interface Frame {
  fn: FunctionMetrics;
  /** Cognitive nesting level at the function's body. */
  base: number;
  depth: number;
}

/** Complexity of every function under `root`; cognitive increments in `[from, to)` are also summed. */
export function complexity(root: Node, from = 0, to = Infinity): ComplexityReport {
  const walker = new Walker(from, to);
  walker.walk(root, 0);
  return { functions: walker.functions, cognitiveInRange: walker.inRange, topLevelNesting: walker.program.fn.maxNesting };
}

class Walker {
  readonly functions: FunctionMetrics[] = [];
  readonly program: Frame = { fn: newFunction('(program)', 0, 0, 0, 0), base: 0, depth: 0 };
  private readonly stack: Frame[] = [];
  inRange = 0;

  constructor(
    private readonly from: number,
    private readonly to: number,
  ) {}

  private get top(): Frame {
    return this.stack[this.stack.length - 1] ?? this.program;
  }

  walk(node: Node, level: number): void {
    if (FUNCTION_TYPES.has(node.type)) return this.enterFunction(node, level);
    this.cyclomatic(node);
    const entersDepth = DEPTH_TYPES.has(node.type) && !isElseIf(node);
    if (entersDepth) this.deeper(node);
    const childLevel = this.cognitive(node, level);
    for (const child of node.children) this.walk(child, childLevel(child));
    if (entersDepth) this.top.depth--;
  }

  private enterFunction(node: Node, level: number): void {
    const body = node.childForFieldName('body');
    const params = node.childForFieldName('parameters') ?? node.childForFieldName('parameter');
    const headEnd = body?.startIndex ?? node.endIndex;
    const fn = newFunction(functionName(node), node.startIndex, node.endIndex, headEnd, lines(node));
    fn.params = params ? (params.type === 'identifier' ? 1 : params.namedChildren.filter((p) => p?.type !== 'comment').length) : 0;
    const bodyLevel = this.stack.length > 0 ? level + 1 : level; // nested functions nest, top-level ones do not
    this.stack.push({ fn, base: bodyLevel, depth: 0 });
    this.functions.push(fn);
    for (const child of node.children) this.walk(child, bodyLevel);
    this.stack.pop();
  }

  private cyclomatic(node: Node): void {
    if (cyclomaticIncrement(node)) this.top.fn.cyclomatic++;
  }

  private deeper(node: Node): void {
    const frame = this.top;
    frame.depth++;
    if (frame.depth > frame.fn.maxNesting) {
      frame.fn.maxNesting = frame.depth;
      frame.fn.deepest = { start: node.startIndex, end: node.firstChild?.endIndex ?? node.endIndex };
    }
  }

  /** Adds the node's cognitive increments; returns the nesting level for each child. */
  private cognitive(node: Node, level: number): (child: Node) => number {
    const same = () => level;
    const nestedBody = (field: string) => (child: Node) => (isField(node, child, field) ? level + 1 : level);
    switch (node.type) {
      case 'if_statement':
        this.add(node, isElseIf(node) ? 1 : 1 + level, level);
        return (child) => (child.type === 'else_clause' ? level : isField(node, child, 'condition') ? level : level + 1);
      case 'else_clause':
        if (node.namedChildren[0]?.type === 'if_statement') return same; // counted as `else if`
        this.add(node, 1, level);
        return () => level + 1;
      case 'ternary_expression':
        this.add(node, 1 + level, level);
        return (child) => (isField(node, child, 'condition') ? level : level + 1);
      case 'switch_statement':
        this.add(node, 1 + level, level);
        return nestedBody('body');
      case 'catch_clause':
        this.add(node, 1 + level, level);
        return () => level + 1;
      case 'break_statement':
      case 'continue_statement':
        if (node.childForFieldName('label')) this.add(node, 1, level);
        return same;
      case 'binary_expression':
        if (isLogicalRoot(node)) this.add(node, logicalRuns(node), level, true);
        return same;
      case 'call_expression':
        if (this.isRecursive(node)) this.add(node, 1, level, true);
        return same;
    }
    if (LOOP_TYPES.has(node.type)) {
      this.add(node, 1 + level, level);
      return nestedBody('body');
    }
    return same;
  }

  /** `amount` at nesting `level` counts for every enclosing function, relative to its own base. */
  private add(node: Node, amount: number, level: number, flat = false): void {
    const nestingPart = flat ? 0 : amount - 1;
    const structural = amount - nestingPart; // 1, or the number of logical runs
    for (const frame of this.stack) {
      frame.fn.cognitive += structural + (nestingPart > 0 ? Math.max(0, level - frame.base) : 0);
    }
    if (node.startIndex >= this.from && node.startIndex < this.to) this.inRange += amount;
  }

  private isRecursive(call: Node): boolean {
    const callee = call.childForFieldName('function');
    const name = this.top.fn.name;
    return callee?.type === 'identifier' && this.stack.length > 0 && callee.text === name;
  }
}

function newFunction(name: string, start: number, end: number, headEnd: number, lineCount: number): FunctionMetrics {
  return { name, start, end, headEnd, cyclomatic: 1, cognitive: 0, maxNesting: 0, deepest: null, params: 0, lines: lineCount };
}

function cyclomaticIncrement(node: Node): boolean {
  switch (node.type) {
    case 'if_statement':
    case 'ternary_expression':
    case 'for_statement':
    case 'for_in_statement':
    case 'while_statement':
    case 'do_statement':
    case 'catch_clause':
    case 'assignment_pattern':
    case 'object_assignment_pattern':
      return true;
    case 'switch_case':
      return node.childForFieldName('value') !== null;
    case 'binary_expression':
      return LOGICAL.has(operator(node));
    case 'augmented_assignment_expression':
      return LOGICAL_ASSIGN.has(operator(node));
    case 'member_expression':
    case 'subscript_expression':
    case 'call_expression':
      return node.childForFieldName('optional_chain') !== null;
  }
  return false;
}

function operator(node: Node): string {
  return node.childForFieldName('operator')?.type ?? '';
}

function isField(parent: Node, child: Node, field: string): boolean {
  return parent.childForFieldName(field)?.id === child.id;
}

function isElseIf(node: Node): boolean {
  return node.type === 'if_statement' && node.parent?.type === 'else_clause';
}

function isLogical(node: Node | null): node is Node {
  return node?.type === 'binary_expression' && LOGICAL.has(operator(node));
}

function unparen(node: Node | null): Node | null {
  let n = node;
  while (n?.type === 'parenthesized_expression') n = n.namedChildren[0] ?? null;
  return n;
}

/** A logical expression not itself an operand (through parentheses) of another logical one. */
function isLogicalRoot(node: Node): boolean {
  if (!isLogical(node)) return false;
  let p = node.parent;
  while (p?.type === 'parenthesized_expression') p = p.parent;
  return !isLogical(p);
}

/** Runs of like operators in source order, through parentheses: `a && b || c && d` has 3. */
function logicalRuns(node: Node): number {
  const ops: string[] = [];
  const collect = (n: Node | null): void => {
    const m = unparen(n);
    if (!isLogical(m)) return;
    collect(m.childForFieldName('left'));
    ops.push(operator(m));
    collect(m.childForFieldName('right'));
  };
  collect(node);
  return ops.filter((op, i) => op !== ops[i - 1]).length;
}

function functionName(node: Node): string {
  const own = node.childForFieldName('name');
  if (own) return own.text;
  const p = node.parent;
  if (p?.type === 'variable_declarator') return p.childForFieldName('name')?.text ?? '(anonymous)';
  if (p?.type === 'pair') return p.childForFieldName('key')?.text ?? '(anonymous)';
  if (p?.type === 'assignment_expression') return p.childForFieldName('left')?.text ?? '(anonymous)';
  if (node.type === 'class_static_block') return '(static block)';
  return node.type === 'arrow_function' ? '(arrow function)' : '(anonymous)';
}

function lines(node: Node): number {
  return node.endPosition.row - node.startPosition.row + 1;
}
