/** A Monaco editor bound to a value; loaded lazily so the rest of the page appears first. */
import { useEffect, useRef } from 'react';
import { monaco } from '../monaco';

export interface CodeEditorProps {
  value: string;
  language: string;
  readOnly?: boolean;
  /** accessible name of the editor */
  label: string;
}

export default function CodeEditor({ value, language, readOnly = false, label }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<monaco.editor.IStandaloneCodeEditor | null>(null);

  useEffect(() => {
    const e = monaco.editor.create(host.current!, {
      value,
      language,
      readOnly,
      ariaLabel: label,
      automaticLayout: true,
      minimap: { enabled: false },
      fontSize: 13,
      scrollBeyondLastLine: false,
      theme: 'vs',
    });
    editor.current = e;
    return () => {
      e.getModel()?.dispose();
      e.dispose();
      editor.current = null;
    };
    // The editor is created once; value and options are synced below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    const model = editor.current?.getModel();
    if (!model) return;
    if (model.getValue() !== value) model.setValue(value);
    monaco.editor.setModelLanguage(model, language);
    editor.current!.updateOptions({ readOnly, ariaLabel: label });
  }, [value, language, readOnly, label]);

  // every line in view (19 px each): the column scrolls, not a box inside it
  const height = Math.max(280, (value.split('\n').length + 1) * 19 + 12);
  return <div className="code-editor" ref={host} style={{ height }} data-testid="code-editor" />;
}
