// A minimal product chat on @ai-sdk/react's useChat with the stock DefaultChatTransport: no
// adapter code between the SDK and batond. The app's own backend (here, the test's server at
// /api/token) mints a user token with its operator key; the browser only ever holds that token.
import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { useState } from 'react';
import { createRoot } from 'react-dom/client';

const params = new URLSearchParams(location.search);
const BATON = params.get('baton');
const agent = params.get('agent');
const chatId = params.get('chat');

// The predicate: send once every client call of the last step is answered, or an approval is.
const sendAutomaticallyWhen = (options) =>
  lastAssistantMessageIsCompleteWithToolCalls(options) ||
  lastAssistantMessageIsCompleteWithApprovalResponses(options);

// A 1x1 PNG, the file part a person attaches.
const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';

function Part({ part, addToolOutput, addToolApprovalResponse }) {
  if (part.type === 'text') return <p data-testid="text">{part.text}</p>;
  if (part.type === 'file') return <p data-testid="file">{part.mediaType}</p>;
  if (part.type === 'reasoning') return <p data-testid="reasoning">{part.text}</p>;
  if (part.type.startsWith('data-') && part.type !== 'data-render') {
    return <p data-testid="data">{`${part.type} ${JSON.stringify(part.data)}`}</p>;
  }
  if (!part.type.startsWith('tool-')) return null;
  const tool = part.type.slice(5);
  return (
    <div data-testid={`tool-${tool}`} data-state={part.state}>
      {tool}: {part.state}
      {part.state === 'input-available' && tool === 'ask_user' && (
        <button
          data-testid="answer"
          onClick={() => addToolOutput({ tool, toolCallId: part.toolCallId, output: { answer: 'Ada' } })}
        >
          Answer Ada
        </button>
      )}
      {part.state === 'approval-requested' && (
        <button
          data-testid="approve"
          onClick={() => addToolApprovalResponse({ id: part.approval.id, approved: true })}
        >
          Approve
        </button>
      )}
    </div>
  );
}

function Chat({ token, initial }) {
  const authorization = { Authorization: `Bearer ${token}` };
  const [transport] = useState(
    () => new DefaultChatTransport({ api: `${BATON}/chat`, headers: authorization, body: { agent } }),
  );
  const { messages, sendMessage, addToolOutput, addToolApprovalResponse, status, error, stop } = useChat({
    id: chatId,
    messages: initial.messages,
    resume: initial.streaming,
    transport,
    sendAutomaticallyWhen,
  });
  const [text, setText] = useState('');
  const [stopped, setStopped] = useState('');
  // stop() ends the response in the browser; the same click tells the server to interrupt.
  const stopRun = async () => {
    stop();
    const answer = await fetch(`${BATON}/chat/${chatId}/stop`, { method: 'POST', headers: authorization });
    setStopped((await answer.json()).status ?? 'refused');
  };
  return (
    <main>
      <div data-testid="status">{status}</div>
      {stopped && <div data-testid="stopped">{stopped}</div>}
      {error && <div data-testid="error">{error.message}</div>}
      {messages.map((message) => (
        <div key={message.id} data-testid={`message-${message.role}`}>
          {message.parts.map((part, index) => (
            <Part key={index} part={part} addToolOutput={addToolOutput} addToolApprovalResponse={addToolApprovalResponse} />
          ))}
          {message.role === 'assistant' && message.metadata?.finishedAt && (
            <p data-testid="meta">{`${(message.metadata.models ?? []).join(',')} ${message.metadata.usage ? 'usage' : ''}`}</p>
          )}
        </div>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          sendMessage({ text });
          setText('');
        }}
      >
        <input data-testid="input" value={text} onChange={(event) => setText(event.target.value)} />
        <button data-testid="send">Send</button>
        <button type="button" data-testid="stop" onClick={stopRun}>Stop</button>
        <button
          type="button"
          data-testid="attach"
          onClick={() => sendMessage({ files: [{ type: 'file', mediaType: 'image/png', url: PIXEL }] })}
        >
          Send a picture
        </button>
      </form>
    </main>
  );
}

// The app's backend gives the token; a reload rebuilds the chat from the snapshot.
const { token } = await (await fetch('/api/token', { method: 'POST' })).json();
const snapshot = await fetch(`${BATON}/chat/${chatId}/snapshot`, { headers: { Authorization: `Bearer ${token}` } });
const initial = snapshot.ok ? await snapshot.json() : { messages: [], streaming: false };
createRoot(document.getElementById('root')).render(<Chat token={token} initial={initial} />);
